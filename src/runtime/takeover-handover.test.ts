import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { callTools, ScriptedProvider, say } from "../../test/support/scripted.js";
import type { ModelEvent, Provider } from "../agent/providers/provider.js";
import type { ToolMessage } from "../core/messages.js";
import type { ToolCallOptions, ToolOutcome } from "../mcp/types.js";
import type { Store } from "../store/index.js";
import { createThreadLock } from "../store/locks.js";
import type { SessionRepository } from "../store/sessions.js";
import type { TurnLedger } from "../store/turns.js";
import { UsageLedger } from "../store/usage.js";
import { ALICE, aliceSays, fakeSlack, HintedHub, KEY, TakeoverBed } from "./takeover.test-helper.js";
import { MAY_HAVE_RUN } from "./turn.js";

/** fs__write answers only when its call is cancelled, as the hub answers a call whose signal aborts. */
class SlowWrites extends HintedHub {
  override async call(
    name: string,
    args: Record<string, unknown>,
    opts?: ToolCallOptions,
  ): Promise<ToolOutcome> {
    if (name !== "fs__write") return super.call(name, args);
    this.calls.push({ name, args, start: performance.now() });
    await new Promise((r) => opts?.signal?.addEventListener("abort", r, { once: true }));
    const text = "The call was cancelled before the tool answered.";
    return { ok: false, text, artifacts: [], ms: 1, server: "fs", tool: "write" };
  }
}

describe("a stopping replica handing its turns and messages to a live one", () => {
  let bed: TakeoverBed;
  let store: Store;
  let sessions: SessionRepository;
  let ledger: TurnLedger;
  let setup: TakeoverBed["setup"];
  let leftBy: TakeoverBed["leftBy"];

  beforeEach(async () => {
    bed = await TakeoverBed.open();
    ({ store, sessions, ledger, setup, leftBy } = bed);
  });

  afterEach(() => bed.close());

  it("a stopping replica hands its running turn and the message waiting behind it to a live one, which answers both", async () => {
    const cut: Provider = {
      name: "openai",
      listModels: async () => [],
      async *stream(_req, signal): AsyncIterable<ModelEvent> {
        yield { type: "text", delta: "Half an ans" };
        await new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
      },
    };
    const stopping = setup(cut, { lock: createThreadLock(store) });
    const other = new ScriptedProvider([say("A whole answer."), say("The second answer.")]);
    const live = setup(other, { lock: createThreadLock(store) });
    const onLive = fakeSlack();
    // Started: it beats from here on, so the stopping replica sees it.
    await live.dispatcher.recoverInterrupted([onLive.adapter]);
    const onStopping = fakeSlack();
    const inbound = aliceSays("e1", "a long question", onStopping.reply);
    const handled = stopping.dispatcher.handle(inbound);
    await vi.waitFor(() => expect(onStopping.seen).toEqual(["Half an ans"]), { timeout: 5_000 });
    const behind = fakeSlack();
    const queued = stopping.dispatcher.handle({
      ...inbound,
      id: "e2",
      text: "and then",
      reply: behind.reply,
    });
    await vi.waitFor(() => expect(stopping.dispatcher.queueStats().queued).toBe(1), { timeout: 5_000 });

    // Two turns in flight when the grace ends: the running one and the one queued behind it.
    expect(await stopping.dispatcher.drain(50)).toEqual({ interrupted: 0, handedOver: 2 });
    await Promise.all([handled, queued]);
    // What it had is written as it stands, and nothing after it: no restart note.
    expect(onStopping.seen).toEqual(["Half an ans", "<finish>"]);
    expect(behind.seen).toEqual([]);
    await vi.waitFor(
      () => expect(onLive.seen).toEqual(["A whole answer.", "<finish>", "The second answer.", "<finish>"]),
      // The live replica looks every 2 s; under a loaded CI machine, give it a few rounds.
      { timeout: 15_000 },
    );
    // The waiting message became a turn of its own, taken over like the first: a new reply.
    expect(onLive.rebuilt).toEqual([
      { messages: [], retake: "", asker: ALICE.id },
      { messages: [], retake: "", asker: ALICE.id },
    ]);
    // The answer is on the platform a moment before its turn saves it and ends its record.
    await vi.waitFor(
      async () => {
        const users = (await sessions.get(KEY))?.messages.filter((m) => m.role === "user");
        expect(users?.map((m) => m.content)).toEqual(["a long question", "and then"]);
        expect(await ledger.pending()).toEqual([]);
      },
      { timeout: 5_000 },
    );
  });

  it("a message whose turn is still finishing the thread's cut-off turn when its process stops is handed over, not dropped", async () => {
    // The cut-off turn's takeover will not end when aborted (a last write waiting for its budget).
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    const asked: string[] = [];
    const stuck: Provider = {
      name: "openai",
      listModels: async () => [],
      async *stream(req): AsyncIterable<ModelEvent> {
        const last = req.messages.findLast((m) => m.role === "user");
        asked.push(typeof last?.content === "string" ? last.content : "");
        yield { type: "text", delta: "Half" };
        await released;
        yield { type: "stop", reason: "end" };
      },
    };
    const stopping = setup(stuck, { lock: createThreadLock(store) });
    const onStopping = fakeSlack();
    await stopping.dispatcher.recoverInterrupted([onStopping.adapter]);
    // Another replica beats (so the message is handed, not noted), and takes nothing over itself.
    const other = createThreadLock(store);
    await other.others();
    await leftBy("a-process-that-died", { address: { messages: ["1.1"] } });
    const fresh = fakeSlack();
    const file = { name: "a.png", mimeType: "image/png", size: 3, url: "http://127.0.0.1:9/a.png" };
    const noBytes = async () => new Uint8Array();
    const handled = stopping.dispatcher.handle({
      ...aliceSays("e2", "and another thing", fresh.reply),
      attachments: [{ ...file, fetch: noBytes }],
    });
    await vi.waitFor(() => expect(onStopping.seen).toEqual(["Half"]), { timeout: 5_000 });

    await stopping.dispatcher.drain(50);
    const handed = await ledger.takeHanded(KEY);
    expect(handed.map((m) => m.text)).toEqual(["and another thing"]);
    // Its file goes with it, for the process that answers it to fetch.
    expect(handed[0]?.files).toEqual([file]);
    release();
    await handled;
    // Handed over, so never answered here as well.
    expect(asked).toEqual(["write the file, then read it"]);
    expect(fresh.seen).toEqual([]);
    await other.close();
  }, 20_000);

  it("a message handed over with a file is answered elsewhere with what the file says, read once", async () => {
    const provider = new ScriptedProvider([say("It says hello.")]);
    const live = setup(provider, { lock: createThreadLock(store) });
    const onLive = fakeSlack();
    const fetched: string[] = [];
    onLive.adapter.fileFrom = (file) => ({
      ...file,
      fetch: async () => {
        fetched.push(file.url);
        return new TextEncoder().encode("hello from the notes");
      },
    });
    // As a stopping process hands it: the message and where its file is, never its bytes.
    const stopping = createThreadLock(store);
    await ledger.hand(KEY, {
      text: "what do my notes say?",
      user: ALICE,
      channel: "C1",
      files: [
        { name: "notes.txt", mimeType: "text/plain", size: 20, url: "http://127.0.0.1:9/files/notes.txt" },
      ],
    });
    await stopping.close();
    await live.dispatcher.recoverInterrupted([onLive.adapter]);

    await vi.waitFor(() => expect(onLive.seen).toEqual(["It says hello.", "<finish>"]), { timeout: 15_000 });
    const asked = provider.requests[0]?.messages.findLast((m) => m.role === "user");
    expect(asked?.content).toContain("[Attached file: notes.txt (text/plain, 20 B)]");
    expect(asked?.content).toContain("hello from the notes");
    expect(fetched).toEqual(["http://127.0.0.1:9/files/notes.txt"]);
  }, 20_000);
  it("a message handed over past its sender's daily budget gets the sentence, and no model request", async () => {
    const provider = new ScriptedProvider([say("Should not be asked.")]);
    const live = setup(provider, {
      lock: createThreadLock(store),
      usage: { budgets: { perUser: { tokens: 100 } } },
    });
    const payer = { platform: "slack" as const, user: ALICE.id, channel: "C1", key: KEY };
    await new UsageLedger(store).record({
      ...payer,
      model: "gpt-4o",
      inputTokens: 150,
      outputTokens: 0,
      cost: 0,
    });
    const onLive = fakeSlack();
    await ledger.hand(KEY, { text: "one more question", user: ALICE, channel: "C1" });
    await live.dispatcher.recoverInterrupted([onLive.adapter]);

    await vi.waitFor(() => expect(onLive.seen).toHaveLength(1), { timeout: 15_000 });
    expect(onLive.seen[0]).toMatch(
      /^<notice:You have used your daily budget of 100 tokens \(150 tokens used\)/,
    );
    // Its reply knows the asker: where the platform can, the sentence is theirs alone.
    expect(onLive.rebuilt).toEqual([{ messages: [], retake: "", asker: ALICE.id }]);
    expect(provider.requests).toEqual([]);
    // Refused, not parked: no record is left for a watcher to run later.
    expect(await ledger.pending()).toEqual([]);
    expect(await ledger.takeHanded(KEY)).toEqual([]);
  }, 20_000);

  it("a tool call the hand-over cut short is one that may have run for the replica taking over, not run again", async () => {
    const slow = new SlowWrites({ fs__write: () => "written" });
    const stopping = setup(new ScriptedProvider([callTools(["fs__write", { path: "a.txt" }])]), {
      lock: createThreadLock(store),
      hub: slow,
    });
    const other = new ScriptedProvider([say("I cannot tell whether a.txt was written.")]);
    const live = setup(other, { lock: createThreadLock(store) });
    const onLive = fakeSlack();
    await live.dispatcher.recoverInterrupted([onLive.adapter]);
    const onStopping = fakeSlack();
    const handled = stopping.dispatcher.handle(aliceSays("e1", "write a.txt", onStopping.reply));
    await vi.waitFor(() => expect(slow.calls.map((c) => c.name)).toEqual(["fs__write"]), { timeout: 5_000 });

    expect(await stopping.dispatcher.drain(50)).toEqual({ interrupted: 0, handedOver: 1 });
    await handled;
    await vi.waitFor(() => expect(onLive.seen.at(-1)).toBe("<finish>"), { timeout: 15_000 });

    const results = other.requests[0]?.messages.filter((m): m is ToolMessage => m.role === "tool");
    expect(results?.map((r) => [r.toolCallId, r.content])).toEqual([["call_fs__write_0", MAY_HAVE_RUN]]);
    expect(live.hub.calls).toEqual([]);
  }, 20_000);
});
