/**
 * Try the bot without an API key: `npx tsx test/emulators/llm/serve.ts [port]`, then point
 * OPENAI_BASE_URL or ANTHROPIC_BASE_URL at the printed address with any non-empty key.
 */
import { demoResponder } from "./demo.js";
import { LlmEmulator } from "./emulator.js";

const arg = process.argv[2];
const port = arg === undefined ? 0 : Number.parseInt(arg, 10);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`usage: serve.ts [port]  (got "${arg}")\n`);
  process.exit(2);
}

const emulator = await LlmEmulator.start({ port, responder: demoResponder });
process.stdout.write(
  [
    `LLM emulator on ${emulator.url}`,
    `  OPENAI_BASE_URL=${emulator.openaiBaseUrl}`,
    `  ANTHROPIC_BASE_URL=${emulator.anthropicBaseUrl}`,
    "  Any non-empty API key is accepted.",
    '  Say "use tool <name> <json>" to make the model call a tool; anything else is echoed.',
    "",
  ].join("\n"),
);

const stop = (): void => {
  void emulator.close().then(() => process.exit(0));
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
