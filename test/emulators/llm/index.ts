export { demoResponder } from "./demo.js";
export { LlmEmulator } from "./emulator.js";
export { echoTurn, lastUserText, trailingToolResults } from "./script.js";
export type {
  CutTurn,
  ErrorTurn,
  RecordedRequest,
  ReplyTurn,
  Responder,
  ScriptedToolCall,
  ScriptedTurn,
} from "./types.js";
