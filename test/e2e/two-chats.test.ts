import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/index.js";
import { SessionRepository } from "../../src/store/sessions.js";
import { LlmEmulator } from "../emulators/llm/index.js";
import { appEnv } from "../support/app-env.js";
import { runChat, scratchConfig } from "../support/chat-process.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";

/**
 * Two terminals chatting at once on one SQLite file share the thread `console:local`:
 * the thread lock holds across the two processes, so every message and answer is kept
 * and neither process takes the other's running turn for one a crash cut off.
 */
describe("two `switchboard chat` processes on one SQLite store", () => {
  let llm: LlmEmulator;
  let dir: string;
  let runs: Awaited<ReturnType<typeof runChat>>[];

  beforeAll(async () => {
    llm = await LlmEmulator.start({
      responder: (req) =>
        isTitleRequest(req)
          ? { text: "Two terminals" }
          : { text: `Answer to ${lastUserText(req)}.`, chunkSize: 3, delayMs: 20 },
    });
    dir = scratchConfig("llm:\n  maxRetries: 0\n");
    const env = appEnv({ dir, llm });
    runs = await Promise.all(
      ["a", "b"].map((who) =>
        runChat(
          Array.from({ length: 5 }, (_, i) => `${who}${i}`),
          env,
        ),
      ),
    );
  }, 120_000);

  afterAll(async () => {
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers all ten messages and keeps them all in the session, in each process's order", async () => {
    for (const run of runs) expect(run.code).toBe(0);
    const store = await openStore(appEnv({ dir, llm }).STORE_URL);
    const session = await new SessionRepository(store).get("console:local");
    await store.close();
    const asked = session?.messages.filter((m) => m.role === "user").map((m) => m.content) ?? [];
    expect(asked.slice().sort()).toEqual(["a0", "a1", "a2", "a3", "a4", "b0", "b1", "b2", "b3", "b4"]);
    expect(asked.filter((m) => m.startsWith("a"))).toEqual(["a0", "a1", "a2", "a3", "a4"]);
    const answers = session?.messages.filter((m) => m.role === "assistant").map((m) => m.content);
    expect(answers).toHaveLength(10);
    expect(runs[0]?.stdout).toContain("Answer to a4.");
    expect(runs[1]?.stdout).toContain("Answer to b4.");
  });

  it("never tells either terminal that a reply was cut off", () => {
    for (const run of runs) expect(run.stdout).not.toContain("cut off");
  });
});
