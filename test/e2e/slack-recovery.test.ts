import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, startApp } from "../../src/app.js";
import { INTERRUPTED_NOTE } from "../../src/runtime/dispatcher.js";
import { openStore } from "../../src/store/index.js";
import { SessionRepository } from "../../src/store/sessions.js";
import { type EmuMessage, SlackEmulator } from "../emulators/slack/index.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";

let slack: SlackEmulator;
let app: App | undefined;
let dir: string;
let root: EmuMessage;
let key: string;

beforeAll(async () => {
  slack = await SlackEmulator.start();
  // The thread whose answer was being written when the process was killed.
  root = slack.state.addMessage({ channel: "C1", user: "U_ALICE", text: "<@U_BOT> a long question" });
  key = `slack:T1:C1:${root.ts}`;
  dir = scratchConfig("llm:\n  maxRetries: 0\n");
  const store = await openStore(`sqlite://${join(dir, "store.sqlite")}`);
  const sessions = new SessionRepository(store);
  const session = await sessions.getOrCreate(key);
  session.pendingReply = { startedAt: new Date().toISOString() };
  await sessions.save(session);
  await store.close();
}, 30_000);

afterAll(async () => {
  await app?.stop();
  await slack?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("Switchboard in Slack after a crash", () => {
  it("ends the interrupted reply with a note in its thread at start-up, once", async () => {
    app = await startApp({
      env: appEnv({ dir, llm: "http://127.0.0.1:9/v1", slack }),
      cwd: dir,
    });
    expect(await app.recovered).toBe(1);
    expect(slack.botReplies("C1", root.ts).map((r) => r.text)).toEqual([INTERRUPTED_NOTE]);
    expect((await app.sessions.get(key))?.pendingReply).toBeUndefined();
    expect(await app.sessions.listPending()).toHaveLength(0);
  });
});
