import type { ScriptedTurn } from "../emulators/llm/index.js";

/**
 * The scripted model's turns that every end-to-end scenario shares, picked by the message's
 * first word: "image" calls a tool that returns a picture, "fail" answers with a 500, and
 * anything else is echoed. `step` counts the tool results since the person's message.
 */
export function sharedTurn(text: string, step: number): ScriptedTurn {
  switch (text.split(/\s/)[0]) {
    case "image":
      return step === 0
        ? { toolCalls: [{ name: "everything__get-tiny-image", arguments: {} }] }
        : { text: "Here is the image." };
    case "fail":
      return { error: { status: 500, message: "upstream exploded" } };
    default:
      return { text: `You said: ${text}` };
  }
}
