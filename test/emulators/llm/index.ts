export {
  charsOver4,
  DEFAULT_CONTEXT_WINDOW,
  DEFAULT_CONTEXT_WINDOWS,
  o200kTokens,
  type TokenCounter,
} from "./context.js";
export { demoResponder } from "./demo.js";
export { LlmEmulator, type LlmEmulatorOptions } from "./emulator.js";
export { echoTurn, lastUserText, trailingToolResults } from "./script.js";
export type {
  CutTurn,
  ErrorTurn,
  RecordedRequest,
  ReplyTurn,
  Responder,
  ScriptedToolCall,
  ScriptedTurn,
  TokenCounts,
} from "./types.js";
