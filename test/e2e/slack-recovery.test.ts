import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, startApp } from "../../src/app.js";
import { INTERRUPTED_NOTE } from "../../src/runtime/dispatcher.js";
import { openStore } from "../../src/store/index.js";
import { TurnLedger } from "../../src/store/turns.js";
import { LlmEmulator, type RecordedRequest } from "../emulators/llm/index.js";
import { type EmuMessage, SlackEmulator } from "../emulators/slack/index.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";
import { ledgerAfter } from "../support/ledger.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";
import { killStarted, startSwitchboard, waitUntil } from "../support/process.js";
import { expectStoreIntact } from "../support/store-integrity.js";

/** An answer that takes about 10 s to stream: long enough to be killed in the middle of. */
const SLOW_ANSWER = `${"chunk ".repeat(250)}THE-END`;

function responder(req: RecordedRequest) {
  if (isTitleRequest(req)) return { text: "Recovery" };
  return { text: SLOW_ANSWER, chunkSize: 6, delayMs: 40 };
}

describe("Switchboard in Slack after a crash before the first write", () => {
  let slack: SlackEmulator;
  let app: App | undefined;
  let dir: string;
  let root: EmuMessage;
  let key: string;

  beforeAll(async () => {
    slack = await SlackEmulator.start();
    // The thread whose answer had not reached Slack yet when the process was killed.
    root = slack.state.addMessage({ channel: "C1", user: "U_ALICE", text: "<@U_BOT> a long question" });
    key = `slack:T1:C1:${root.ts}`;
    dir = scratchConfig("llm:\n  maxRetries: 0\n");
    const store = await openStore(`sqlite://${join(dir, "store.sqlite")}`);
    await new TurnLedger(store).begin(key);
    await store.close();
  }, 30_000);

  afterAll(async () => {
    await app?.stop();
    await slack?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("posts the note in its thread at start-up, once", async () => {
    app = await startApp({
      env: appEnv({ dir, llm: "http://127.0.0.1:9/v1", slack }),
      cwd: dir,
    });
    expect(await app.recovered).toBe(1);
    expect(slack.botReplies("C1", root.ts).map((r) => r.text)).toEqual([INTERRUPTED_NOTE]);
    expect(await new TurnLedger(app.store).pending()).toHaveLength(0);
  });
});

/** An LLM emulator answering with `responder`, a Slack emulator and a scratch config with `yaml`, for one describe block. */
function emulatedPeers(
  responder: (req: RecordedRequest) => { text: string; chunkSize?: number; delayMs?: number },
  yaml: string,
) {
  const peers = {} as { llm: LlmEmulator; slack: SlackEmulator; dir: string; env: NodeJS.ProcessEnv };
  beforeAll(async () => {
    peers.llm = await LlmEmulator.start({ responder });
    peers.slack = await SlackEmulator.start();
    peers.dir = scratchConfig(yaml);
    peers.env = appEnv({ dir: peers.dir, llm: peers.llm, slack: peers.slack });
  });
  afterAll(async () => {
    killStarted();
    await peers.slack?.stop();
    await peers.llm?.close();
    rmSync(peers.dir, { recursive: true, force: true });
  });
  return peers;
}

for (const native of [false, true]) {
  describe(`kill -9 mid-answer in Slack, native streaming ${native ? "on" : "off"}`, () => {
    const peers = emulatedPeers(
      responder,
      `llm:\n  maxRetries: 0\nslack:\n  updateIntervalMs: 250\n  nativeStreaming: ${native}\n`,
    );

    it("the restarted bot finishes the cut-off answer in its own message, asking the model again, posting nothing else", async () => {
      const { llm, slack, env } = peers;
      const first = startSwitchboard("start", env);
      await waitUntil(() => first.stderr().includes("Switchboard is running"), "the bot to start");
      const m = slack.mention("C1", "U_BOB", "a slow answer please");
      // A message written on after its first write: its address is in the store by then.
      const cut = () => slack.botReplies("C1", m.ts)[0];
      await waitUntil(() => (cut()?.edits.length ?? 0) >= 2, "the answer to be streaming");
      first.child.kill("SIGKILL");
      await first.exited;
      const killed = Date.now();
      const before = { thread: slack.threadMessages("C1", m.ts).length, ts: cut()!.ts, text: cut()!.text };
      expect(before.text).not.toContain("THE-END");
      expect(cut()?.stream?.state ?? "none").toBe(native ? "streaming" : "none");
      const callsBefore = slack.api.calls.length;
      const asked = () => llm.requests.filter((r) => !isTitleRequest(r)).length;
      expect(asked()).toBe(1);

      const second = startSwitchboard("start", env);
      try {
        await waitUntil(() => cut()?.text === SLOW_ANSWER, "the whole answer in the cut-off message", 60_000);
        console.info(
          `slack takeover (native ${native}): answer complete ${Date.now() - killed} ms after the kill`,
        );
        expect(cut()?.ts).toBe(before.ts);
        expect(asked()).toBe(2);
        if (native) expect(cut()?.stream?.state).toBe("stopped");
        // Nothing else lands in the thread, not even a moment later.
        await new Promise((r) => setTimeout(r, 1_000));
        expect(slack.threadMessages("C1", m.ts)).toHaveLength(before.thread);
        expect(cut()?.text).toBe(SLOW_ANSWER);
        const posts = slack.api.calls
          .slice(callsBefore)
          .filter((c) => c.method === "chat.postMessage" || c.method === "chat.startStream");
        expect(posts).toEqual([]);
        expect(await ledgerAfter(env)).toEqual([]);
      } finally {
        second.child.kill("SIGTERM");
        await second.exited;
      }
      await expectStoreIntact(env.STORE_URL!);
    }, 90_000);

    it("a kill -9 while its first message is on its way: the restarted bot writes on in the message Slack had, posting it no second time", async () => {
      const { llm, slack, env } = peers;
      // A channel of its own: the budget of the last test's edits is not this one's.
      const channel = "C2";
      slack.state.addChannel(channel, "room-two");
      const first = startSwitchboard("start", env);
      await waitUntil(() => first.stderr().includes("Switchboard is running"), "the bot to start");
      // Slack makes the message at once and answers late: the bot dies before it learns its ts.
      slack.slow.set(native ? "chat.startStream" : "chat.postMessage", 10_000);
      const asked = () => llm.requests.filter((r) => !isTitleRequest(r)).length;
      const askedBefore = asked();
      const m = slack.mention(channel, "U_BOB", "a slow answer please");
      const replies = () => slack.botReplies(channel, m.ts);
      await waitUntil(() => replies().length > 0, "the first message to be in Slack");
      first.child.kill("SIGKILL");
      await first.exited;
      slack.slow.clear();
      const cut = replies()[0]!;
      expect(cut.text).not.toContain("THE-END");
      const joined = () =>
        replies()
          .map((r) => r.text)
          .join("");

      const second = startSwitchboard("start", env);
      try {
        await waitUntil(() => joined().endsWith("THE-END"), "the answer's end", 60_000);
        expect(asked() - askedBefore).toBe(2);
        if (native) expect(cut.stream?.state).toBe("stopped");
        await new Promise((r) => setTimeout(r, 1_000));
        // Written on in the message the dead process began (a 429 may move the rest to a next one): its text once.
        expect(replies()[0]?.ts).toBe(cut.ts);
        expect(joined()).toBe(SLOW_ANSWER);
        expect(await ledgerAfter(env)).toEqual([]);
      } finally {
        second.child.kill("SIGTERM");
        await second.exited;
      }
    }, 90_000);
  });
}

/** "are you there?" at once; each "qN" in about 1.5 s, naming its question at its end. */
function intakeResponder(req: RecordedRequest) {
  if (isTitleRequest(req)) return { text: "Redelivered" };
  const asked = lastUserText(req).replace(/^\[[^\]]*\]\s*/, "");
  if (!/^q\d+$/.test(asked)) return { text: "Here it is." };
  return { text: crowdAnswerTo(asked), chunkSize: 6, delayMs: 40 };
}

const crowdAnswerTo = (q: string) => `${"word ".repeat(40)}END of ${q}.`;

describe("kill -9 while a message is on its way to the store, in Slack", () => {
  const peers = emulatedPeers(intakeResponder, "llm:\n  maxRetries: 0\n");

  it("leaves the message unacknowledged, so the restarted bot answers Slack's redelivery, once", async () => {
    const { llm, slack, env } = peers;
    const first = startSwitchboard("start", env);
    await waitUntil(() => first.stderr().includes("Switchboard is running"), "the bot to start");
    // The asker's name is looked up before the message goes to the store: Slack is slow to give it.
    slack.slow.set("users.info", 10_000);
    const asked = slack.api.calls.length;
    const m = slack.mention("C1", "U_BOB", "are you there?");
    await waitUntil(
      () => slack.api.calls.slice(asked).some((c) => c.method === "users.info"),
      "the bot to look up the asker",
    );
    first.child.kill("SIGKILL");
    await first.exited;
    const delivery = slack.delivery.deliveries.find(
      (d) => (d.payload as { event?: { type?: string; ts?: string } }).event?.type === "app_mention",
    );
    expect(delivery?.acked).toBe(false);
    expect(llm.requests).toHaveLength(0);
    slack.slow.clear();

    const second = startSwitchboard("start", env);
    try {
      await waitUntil(
        () => slack.botReplies("C1", m.ts).some((r) => r.text === "Here it is."),
        "the answer to the redelivered message",
        60_000,
      );
      expect(delivery?.envelopeIds.length).toBeGreaterThan(1);
      await new Promise((r) => setTimeout(r, 1_000));
      expect(slack.botReplies("C1", m.ts).map((r) => r.text)).toEqual(["Here it is."]);
      expect(llm.requests.filter((r) => !isTitleRequest(r))).toHaveLength(1);
      expect(delivery?.acked).toBe(true);
      await waitUntil(() => !m.reactions.has("eyes"), "the :eyes: to go");
    } finally {
      second.child.kill("SIGTERM");
      await second.exited;
    }
  }, 90_000);

  it("answers each of a crowd once after a kill -9 in its intake: from the store, or from Slack's redelivery", async () => {
    const { slack, env } = peers;
    const questions = Array.from({ length: 12 }, (_, i) => ({ q: `q${i + 1}`, channel: `C${i + 10}` }));
    for (const { channel } of questions) slack.state.addChannel(channel, `room-${channel}`);
    const first = startSwitchboard("start", env);
    await waitUntil(() => first.stderr().includes("Switchboard is running"), "the bot to start");
    // Names come slowly: the messages taken last are still on their way to the store at the kill.
    slack.slow.set("users.info", 10_000);
    // And Slack answers a stream's start late: the answers begun have no ts in their records at the kill.
    slack.slow.set("chat.startStream", 10_000);
    type Sent = { q: string; channel: string; m: EmuMessage };
    const sent: Sent[] = [];
    for (const x of questions) {
      sent.push({ ...x, m: slack.mention(x.channel, "U_ALICE", x.q) });
      await new Promise((r) => setTimeout(r, 60));
    }
    const replies = (x: Sent) => slack.botReplies(x.channel, x.m.ts);
    await waitUntil(() => sent.some((x) => replies(x).length > 0), "the first answer to show");
    first.child.kill("SIGKILL");
    await first.exited;
    slack.slow.clear();
    const eventOf = (d: { payload: unknown }) =>
      (d.payload as { event?: { ts?: string; type?: string } }).event;
    const mentionOf = (x: Sent) =>
      slack.delivery.deliveries.find((d) => eventOf(d)?.type === "app_mention" && eventOf(d)?.ts === x.m.ts);
    const unacked = sent.filter((x) => !mentionOf(x)?.acked).length;
    const begun = sent.filter((x) => replies(x).length > 0).length;

    const second = startSwitchboard("start", env);
    try {
      const whole = (x: Sent) =>
        replies(x)
          .map((r) => r.text)
          .join("") === crowdAnswerTo(x.q);
      await waitUntil(() => sent.every(whole), "every answer, once and whole", 60_000).catch((err) => {
        const said = sent.map(
          (x) =>
            `${x.q}: ${JSON.stringify(replies(x).map((r) => r.text.slice(-20)))} acked=${mentionOf(x)?.acked} envelopes=${mentionOf(x)?.envelopeIds.length}`,
        );
        // Say which and keep both processes' logs: a loss is otherwise unexplained.
        const logs = mkdtempSync(join(tmpdir(), "intake-kill-"));
        writeFileSync(join(logs, "answers.txt"), said.join("\n"));
        writeFileSync(join(logs, "first.log"), first.stderr());
        writeFileSync(join(logs, "second.log"), second.stderr());
        // And in the failure itself: a CI machine's /tmp is gone by the time anyone reads it.
        const warned = second
          .stderr()
          .split("\n")
          .filter((l) => /"level":(40|50|60)/.test(l))
          .slice(-15);
        throw new Error(
          `${(err as Error).message}; logs in ${logs}\n${said.join("\n")}\n${warned.join("\n")}`,
        );
      });
      await new Promise((r) => setTimeout(r, 1_000));
      console.info(
        `intake kill -9: ${begun} answers had begun, ${unacked} of ${sent.length} messages were not acknowledged`,
      );
      // Some were caught on their way to the store: Slack had no acknowledgement of them.
      expect(unacked).toBeGreaterThan(0);
      for (const x of sent)
        expect(
          replies(x)
            .map((r) => r.text)
            .join(""),
        ).toBe(crowdAnswerTo(x.q));
      await waitUntil(
        () => sent.every((x) => !x.m.reactions.has("eyes")),
        "the :eyes: to leave every message",
      );
      expect(await ledgerAfter(env)).toEqual([]);
    } finally {
      second.child.kill("SIGTERM");
      await second.exited;
    }
  }, 120_000);
});
