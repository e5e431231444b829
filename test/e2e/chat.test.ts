import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../emulators/llm/index.js";
import { appEnv } from "../support/app-env.js";
import { everythingMcp, repoRoot, runChat, scratchConfig } from "../support/chat-process.js";
import { isTitleRequest, lastUserText, toolResultsSinceUser, toolsForbidden } from "../support/llm-text.js";
import { sharedTurn } from "../support/scenario.js";

/** What the scripted model does for each kind of message; the first word of the message picks it. */
function scenario(req: RecordedRequest): ScriptedTurn {
  if (isTitleRequest(req)) return { text: "Checking the echo tool" };
  const text = lastUserText(req);
  const results = toolResultsSinceUser(req);
  const step = results.length;
  const word = text.split(/\s/)[0];
  switch (word) {
    case "plain":
      return { text: "A plain answer, streamed in pieces.", chunkSize: 4 };
    case "echo":
      return step === 0
        ? { toolCalls: [{ name: "everything__echo", arguments: { message: "pong-42" } }] }
        : { text: `The tool answered: ${results.join(" | ")}` };
    case "parallel":
      return step === 0
        ? {
            toolCalls: [
              { name: "everything__get-sum", arguments: { a: 1, b: 2 } },
              { name: "everything__get-sum", arguments: { a: 30, b: 12 } },
            ],
          }
        : { text: `Sums: ${results.join(" | ")}` };
    case "loop":
      return toolsForbidden(req)
        ? { text: "I stopped repeating myself." }
        : { toolCalls: [{ name: "everything__echo", arguments: { message: "again" } }] };
    case "steps":
      return toolsForbidden(req)
        ? { text: `Out of steps after ${step} tool results.` }
        : { toolCalls: [{ name: "everything__echo", arguments: { message: `step ${step}` } }] };
    case "badjson":
      return step === 0
        ? { toolCalls: [{ name: "everything__echo", arguments: '{"message": "unterminated' }] }
        : { text: `Recovered from: ${results[0]?.slice(0, 80)}` };
    case "unknown":
      return step === 0
        ? { toolCalls: [{ name: "everything__does_not_exist", arguments: {} }] }
        : { text: `Tool error seen: ${results[0]}` };
    default:
      return sharedTurn(text, step);
  }
}

const CONFIG = `
llm:
  maxRetries: 1
agent:
  maxSteps: 3
mcp:
  callTimeoutMs: 20000
`;

for (const protocol of ["openai", "anthropic"] as const) {
  // `npm run chat`, the README's command, once; the compiled build for the other provider.
  const via = protocol === "openai" ? "npm" : "node";
  describe(`${via === "npm" ? "npm run chat" : "switchboard chat"} with the ${protocol} provider`, () => {
    let llm: LlmEmulator;
    let dir: string;
    let run: Awaited<ReturnType<typeof runChat>>;
    let answers: string;

    beforeAll(async () => {
      llm = await LlmEmulator.start({ responder: scenario });
      dir = scratchConfig(CONFIG, everythingMcp);
      run = await runChat(
        [
          "plain hello",
          "echo please",
          "parallel sums",
          "image please",
          "loop forever",
          "steps many",
          "badjson now",
          "unknown tool",
          "fail hard",
          `big ${"x".repeat(200_000)}`,
          "after everything, still here?",
        ],
        appEnv({ dir, llm, protocol }),
        { via },
      );
      answers = run.stdout;
    }, 120_000);

    afterAll(async () => {
      await llm?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it("exits 0 at the end of piped input", () => {
      expect(run.code, run.stderr).toBe(0);
    });

    it("streams a plain answer to stdout", () => {
      expect(answers).toContain("A plain answer, streamed in pieces.");
    });

    it("calls a tool and puts its result in the answer, with the call shown on stderr", () => {
      expect(answers).toContain("The tool answered: Echo: pong-42");
      expect(run.stderr).toContain("Calling everything__echo");
    });

    it("runs parallel calls and returns both results", () => {
      expect(answers).toMatch(/Sums: .*3.* \| .*42/);
    });

    it("writes an image from a tool to ./artifacts and prints its path", () => {
      const match = /📎 [^:]+: (artifacts\/\S+\.png)/.exec(answers);
      expect(match, answers).not.toBeNull();
      const file = join(repoRoot, match![1]!);
      expect(existsSync(file)).toBe(true);
      expect(readFileSync(file).subarray(1, 4).toString()).toBe("PNG");
      rmSync(file);
      expect(answers).toContain("Here is the image.");
    });

    it("stops a call repeated three times", () => {
      expect(answers).toContain("I stopped repeating myself.");
      const loopCalls = llm.requests.filter((r) => lastUserText(r).startsWith("loop") && !toolsForbidden(r));
      expect(loopCalls).toHaveLength(3);
    });

    it("asks for a final answer at the step limit", () => {
      expect(answers).toContain("Out of steps after 3 tool results.");
    });

    it("tells the model about malformed tool-call JSON and lets it recover", () => {
      // OpenAI has no error flag on a tool message, so the provider marks the text itself.
      const marked = protocol === "openai" ? "Error: " : "";
      const result = `${marked}The arguments for everything__echo were not a valid JSON object: {"message": "unterminated`;
      expect(answers).toContain(`Recovered from: ${result.slice(0, 80)}`);
    });

    it("tells the model about an unknown tool", () => {
      expect(answers).toMatch(/Tool error seen: .*does_not_exist/);
    });

    it("turns an LLM failure after retries into one clear sentence", () => {
      const failures = llm.requests.filter((r) => lastUserText(r).startsWith("fail"));
      expect(failures.length).toBe(2); // the first try and one retry (maxRetries: 1)
      expect(answers).toContain(
        "⚠️ The language model service is not answering properly right now (HTTP 500); I tried 2 times. Please try again in a few minutes.\n",
      );
      expect(answers).not.toContain("upstream exploded");
    });

    it("refuses a 200 KB message with a sentence, without calling the model", () => {
      expect(answers).toMatch(/⚠️ Your message has 200,004 characters; I can take at most 100,000/);
      expect(llm.requests.some((r) => lastUserText(r).startsWith("big"))).toBe(false);
    });

    it("keeps answering after every failure", () => {
      expect(answers).toContain("You said: after everything, still here?");
    });

    it("makes a title once, after the first reply", () => {
      expect(run.stderr.match(/Title: /g)).toHaveLength(1);
      expect(run.stderr).toContain("Title: Checking the echo tool");
    });
  });
}
