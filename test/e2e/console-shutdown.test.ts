import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/index.js";
import { SessionRepository } from "../../src/store/sessions.js";
import { TurnLedger } from "../../src/store/turns.js";
import { LlmEmulator } from "../emulators/llm/index.js";
import { appEnv } from "../support/app-env.js";
import { everythingMcp, scratchConfig } from "../support/chat-process.js";
import { lastUserText } from "../support/llm-text.js";
import { alive, childPids, killStarted, startSwitchboard, waitUntil } from "../support/process.js";

const startChat = (env: NodeJS.ProcessEnv) => startSwitchboard("chat", env);
const waitFor = waitUntil;

describe("stopping the terminal chat mid-answer", () => {
  let llm: LlmEmulator;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const slowAnswer = `${"word ".repeat(400)}END`;

  beforeAll(async () => {
    llm = await LlmEmulator.start({
      responder: (req) =>
        lastUserText(req).startsWith("slow")
          ? { text: slowAnswer, chunkSize: 5, delayMs: 30 }
          : { text: `You said: ${lastUserText(req)}` },
    });
    dir = scratchConfig("shutdown:\n  graceMs: 300\n", everythingMcp);
    env = appEnv({ dir, llm });
  });

  afterAll(async () => {
    killStarted();
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("ends the answer with a note on SIGTERM, saves the session, leaves no MCP process and exits 0", async () => {
    const chat = startChat(env);
    chat.child.stdin.write("slow answer please\n");
    await waitFor(() => chat.stdout().includes("word word word"), "the answer to start streaming");
    const servers = childPids(chat.child.pid!);
    expect(servers.length).toBeGreaterThan(0);
    const signalled = Date.now();
    chat.child.kill("SIGTERM");
    expect(await chat.exited).toBe(0);
    const exitMs = Date.now() - signalled;
    expect(chat.stdout()).toContain("Interrupted by a restart; ask again.");
    expect(chat.stdout()).not.toContain("END");
    expect(servers.filter(alive)).toEqual([]);
    const store = await openStore(env.STORE_URL!);
    const session = await new SessionRepository(store).get("console:local");
    const pending = await new TurnLedger(store).pending();
    await store.close();
    expect(session?.messages.at(-1)).toMatchObject({ role: "user", content: "slow answer please" });
    expect(pending).toEqual([]);
    console.info(`shutdown: exited ${exitMs} ms after SIGTERM, 1 turn interrupted`);
  }, 60_000);

  it("after kill -9 mid-answer, the next start ends the cut-off reply with the note", async () => {
    const first = startChat(env);
    first.child.stdin.write("slow again\n");
    await waitFor(() => first.stdout().includes("word word"), "the answer to start streaming");
    first.child.kill("SIGKILL");
    await first.exited;

    const second = startChat(env);
    second.child.stdin.end("are you there?\n");
    expect(await second.exited).toBe(0);
    expect(second.stdout()).toMatch(
      /The last answer here was cut off\. Interrupted by a restart; ask again\./,
    );
    expect(second.stdout()).toContain("You said: are you there?");
  }, 60_000);
});

describe("a second stop signal", () => {
  let llm: LlmEmulator;
  const dirs: string[] = [];
  const slowAnswer = `${"word ".repeat(400)}END`;

  beforeAll(async () => {
    llm = await LlmEmulator.start({ responder: () => ({ text: slowAnswer, chunkSize: 5, delayMs: 30 }) });
  });

  afterAll(async () => {
    killStarted();
    await llm?.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  /** A chat with no MCP server, `graceMs` to finish, already streaming a 12-second answer. */
  async function streamingChat(graceMs: number) {
    const dir = scratchConfig(`shutdown:\n  graceMs: ${graceMs}\n`);
    dirs.push(dir);
    const chat = startChat(appEnv({ dir, llm }));
    chat.child.stdin.write("slow answer please\n");
    await waitFor(() => chat.stdout().includes("word word word"), "the answer to start streaming");
    return chat;
  }

  it("within a second of the first is the same stop (npm and tsx both pass it on): drains and exits 0", async () => {
    const chat = await streamingChat(300);
    chat.child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 100));
    chat.child.kill("SIGTERM");
    expect(await chat.exited).toBe(0);
    expect(chat.stdout()).toContain("Interrupted by a restart; ask again.");
  }, 60_000);

  it("more than a second after the first exits at once with code 1, without waiting for the answer", async () => {
    const chat = await streamingChat(20_000);
    chat.child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 1_200));
    expect(chat.child.exitCode).toBeNull();
    const second = Date.now();
    chat.child.kill("SIGTERM");
    expect(await chat.exited).toBe(1);
    expect(Date.now() - second).toBeLessThan(2_000);
    expect(chat.stdout()).not.toContain("END");
    expect(chat.stdout()).not.toContain("Interrupted by a restart");
  }, 60_000);
});
