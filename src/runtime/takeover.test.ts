import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FunctionHub, ScriptedProvider, say } from "../../test/support/scripted.js";
import { Agent } from "../agent/agent.js";
import type { ModelEvent, Provider } from "../agent/providers/provider.js";
import { configSchema } from "../config.js";
import type { ToolMessage } from "../core/messages.js";
import type { ResumeFrom } from "../core/replies.js";
import type { ToolEntry } from "../mcp/types.js";
import { ApprovalBook } from "../store/approvals.js";
import { MemoryDedupe } from "../store/dedupe.js";
import { openStore, type Store } from "../store/index.js";
import { createThreadLock, LocalThreadLock, type ThreadLock } from "../store/locks.js";
import { SessionRepository } from "../store/sessions.js";
import { createState } from "../store/state.js";
import { TurnLedger, type TurnRecord } from "../store/turns.js";
import { UsageLedger } from "../store/usage.js";
import { Budgets } from "./budgets.js";
import type { Adapter, Inbound, Reply } from "./contract.js";
import { Dispatcher, INTERRUPTED_NOTE } from "./dispatcher.js";
import { MAX_TAKEOVERS, MAY_HAVE_RUN } from "./turn.js";

const KEY = "slack:T1:C1:1712345678.000100";
const ALICE = { id: "U1", name: "alice" };

/** fs__read says it is read-only; fs__write says nothing, so it is not run twice. */
class HintedHub extends FunctionHub {
  override tools(): ToolEntry[] {
    return super.tools().map((t) => (t.tool === "read" ? { ...t, annotations: { readOnlyHint: true } } : t));
  }
}

/** A platform that records what a rebuilt reply shows and where it was asked to write. */
function fakeSlack() {
  const seen: string[] = [];
  const rebuilt: ResumeFrom[] = [];
  const notes: string[] = [];
  const reply: Reply = {
    status: async () => undefined,
    stream: () => ({
      write: (d) => void seen.push(d),
      finish: async () => void seen.push("<finish>"),
      fail: async (m) => void seen.push(`<fail:${m}>`),
      abandon: async () => void seen.push("<abandon>"),
    }),
    upload: async () => undefined,
    title: async () => undefined,
    notice: async (t) => void seen.push(`<notice:${t}>`),
  };
  const adapter: Adapter = {
    platform: "slack",
    start: async () => undefined,
    stop: async () => undefined,
    ready: () => true,
    replyFor: (_key, from) => {
      rebuilt.push(from);
      return reply;
    },
    recover: async (_key, _address, note) => void notes.push(note),
  };
  return { adapter, seen, rebuilt, notes, reply };
}

/** Alice's message `text` in the thread, answered in `reply`. */
function aliceSays(id: string, text: string, reply: Reply): Inbound {
  return { id, key: KEY, platform: "slack", channel: "C1", user: ALICE, text, attachments: [], reply };
}

describe("taking over a turn whose process died", () => {
  let dir: string;
  let store: Store;
  let sessions: SessionRepository;
  let ledger: TurnLedger;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "sb-takeover-"));
    store = await openStore(`sqlite://${join(dir, "s.sqlite")}`);
    sessions = new SessionRepository(store);
    ledger = new TurnLedger(store);
    // Titled already: no title request follows the answers these tests count requests of.
    await sessions.save({ ...(await sessions.getOrCreate(KEY)), title: "Titled" });
  });

  const running: Dispatcher[] = [];

  afterEach(async () => {
    await Promise.all(running.splice(0).map((d) => d.drain(0)));
    await store.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  function setup(provider: Provider, lock: ThreadLock = new LocalThreadLock(), usage?: unknown) {
    const hub = new HintedHub({ fs__write: () => "written", fs__read: () => "the file says hi" });
    const config = configSchema.parse({
      approvals: { rules: [{ server: "*", mode: "always" }] },
      ...(usage ? { usage } : {}),
    });
    const agent = new Agent({ config, hub, providerFor: () => provider, sessions });
    const dispatcher = new Dispatcher({
      agent,
      sessions,
      ledger,
      lock,
      dedupe: new MemoryDedupe(),
      approvals: new ApprovalBook(store),
      hub,
      config,
      ...(usage ? { budgets: new Budgets(config, new UsageLedger(store)) } : {}),
    });
    running.push(dispatcher);
    return { dispatcher, hub, lock };
  }

  /** A turn as a process left it: begun by `owner`, with what `extra` says it got to. */
  async function leftBy(owner: string, extra: Partial<TurnRecord> = {}): Promise<TurnRecord> {
    const record = await ledger.begin(KEY, {
      id: "turn-1",
      owner,
      input: { text: "write the file, then read it", user: ALICE, channel: "C1" },
    });
    Object.assign(record, extra);
    await ledger.checkpoint(record, extra.shown ?? "");
    if (extra.calling) await ledger.calling(record, extra.calling);
    return record;
  }

  async function askedAlready(): Promise<void> {
    const session = await sessions.getOrCreate(KEY);
    session.messages.push({ role: "user", content: "write the file, then read it", turn: "turn-1" });
    await sessions.save(session);
  }

  it("does not run again a call that may have run, runs a read-only one again, and goes on in the same reply", async () => {
    await askedAlready();
    await leftBy("a-process-that-died", {
      shown: "Let me do that.",
      address: { messages: ["1712345679.000200"] },
      calling: {
        assistant: {
          role: "assistant",
          content: "Let me do that.",
          toolCalls: [
            { id: "c1", name: "fs__write", arguments: { path: "a.txt" } },
            { id: "c2", name: "fs__read", arguments: { path: "a.txt" } },
          ],
        },
        asks: ["c1", "c2"],
        settled: [],
      },
    });
    const provider = new ScriptedProvider([say("Done: the file says hi.")]);
    const { dispatcher, hub } = setup(provider);
    const slack = fakeSlack();

    expect(await dispatcher.recoverInterrupted([slack.adapter])).toBe(1);

    expect(hub.calls.map((c) => c.name)).toEqual(["fs__read"]);
    expect(slack.rebuilt).toEqual([
      { messages: ["1712345679.000200"], retake: "Let me do that.", asker: ALICE.id },
    ]);
    // The new text follows the kept text as the loop separates steps.
    expect(slack.seen).toEqual(["\n\nDone: the file says hi.", "<finish>"]);
    const results = provider.requests[0]!.messages.filter((m): m is ToolMessage => m.role === "tool");
    expect(results.map((r) => [r.toolCallId, r.content, r.isError ?? false])).toEqual([
      ["c1", MAY_HAVE_RUN, true],
      ["c2", "the file says hi", false],
    ]);
    const session = await sessions.get(KEY);
    expect(session?.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool", "assistant"]);
    expect(await ledger.pending()).toEqual([]);
  });

  it("asks the model again when the question was not saved yet, and saves it once", async () => {
    await leftBy("a-process-that-died", { address: { messages: ["1712345679.000200"] } });
    const provider = new ScriptedProvider([say("Here you are.")]);
    const { dispatcher, hub } = setup(provider);
    const slack = fakeSlack();

    await dispatcher.recoverInterrupted([slack.adapter]);

    expect(hub.calls).toEqual([]);
    expect(provider.requests).toHaveLength(1);
    expect(slack.rebuilt[0]?.retake).toBe("");
    expect(slack.seen).toEqual(["Here you are.", "<finish>"]);
    const users = (await sessions.get(KEY))?.messages.filter((m) => m.role === "user");
    expect(users).toEqual([
      { role: "user", content: "write the file, then read it", author: "alice", turn: "turn-1" },
    ]);
  });

  it("only shows an answer that was saved before the process died, without asking the model", async () => {
    await askedAlready();
    const session = await sessions.getOrCreate(KEY);
    session.messages.push({ role: "assistant", content: "The whole answer." });
    await sessions.save(session);
    await leftBy("a-process-that-died", { address: { messages: ["1712345679.000200"] } });
    const provider = new ScriptedProvider([]);
    const { dispatcher } = setup(provider);
    const slack = fakeSlack();

    await dispatcher.recoverInterrupted([slack.adapter]);

    expect(provider.requests).toHaveLength(0);
    expect(slack.seen).toEqual(["The whole answer.", "<finish>"]);
    expect((await sessions.get(KEY))?.messages).toHaveLength(2);
  });

  it("leaves alone a turn whose process still beats", async () => {
    const provider = new ScriptedProvider([say("never")]);
    const { dispatcher, lock } = setup(provider);
    await leftBy(lock.owner);
    const slack = fakeSlack();

    expect(await dispatcher.recoverInterrupted([slack.adapter])).toBe(0);
    expect(provider.requests).toHaveLength(0);
    expect(await ledger.pending()).toHaveLength(1);
  });

  it(`ends a turn taken over ${MAX_TAKEOVERS} times already with the restart note`, async () => {
    await leftBy("a-process-that-died", { takeovers: MAX_TAKEOVERS });
    const provider = new ScriptedProvider([say("never")]);
    const { dispatcher } = setup(provider);
    const slack = fakeSlack();

    await dispatcher.recoverInterrupted([slack.adapter]);

    expect(provider.requests).toHaveLength(0);
    expect(slack.notes).toEqual([INTERRUPTED_NOTE]);
    expect(await ledger.pending()).toEqual([]);
  });

  it("finishes a thread's unfinished turn before answering its new message", async () => {
    const provider = new ScriptedProvider([say("The first answer."), say("The second answer.")]);
    const { dispatcher } = setup(provider);
    const slack = fakeSlack();
    expect(await dispatcher.recoverInterrupted([slack.adapter])).toBe(0);
    // Left after the start-up pass: the new message finds it before the watcher does.
    await leftBy("a-process-that-died", { shown: "Half of the first", address: { messages: ["1.1"] } });
    const fresh = fakeSlack();
    const inbound = aliceSays("e2", "and another thing", fresh.reply);
    await dispatcher.handle(inbound);

    expect(provider.requests.map((r) => r.messages.filter((m) => m.role === "user").length)).toEqual([1, 2]);
    expect(slack.seen[0]).toBe("\n\nThe first answer.");
    const users = (await sessions.get(KEY))?.messages.filter((m) => m.role === "user").map((m) => m.content);
    expect(users).toEqual(["write the file, then read it", "and another thing"]);
    expect(fresh.seen).toEqual(["The second answer.", "<finish>"]);
  });

  it("a stopping replica hands its running turn and the message waiting behind it to a live one, which answers both", async () => {
    const cut: Provider = {
      name: "openai",
      listModels: async () => [],
      async *stream(_req, signal): AsyncIterable<ModelEvent> {
        yield { type: "text", delta: "Half an ans" };
        await new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
      },
    };
    const stopping = setup(cut, createThreadLock(store));
    const other = new ScriptedProvider([say("A whole answer."), say("The second answer.")]);
    const live = setup(other, createThreadLock(store));
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
    const stopping = setup(stuck, createThreadLock(store));
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
    const live = setup(provider, createThreadLock(store));
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

  it("a turn's record carries its message's files, for a process taking it over while they download", async () => {
    const provider = new ScriptedProvider([say("Noted.")]);
    const { dispatcher } = setup(provider);
    const file = { name: "notes.txt", mimeType: "text/plain", size: 5, url: "http://127.0.0.1:9/notes.txt" };
    let whileReading: TurnRecord | undefined;
    const onSlack = fakeSlack();
    await dispatcher.handle({
      ...aliceSays("e1", "read my notes", onSlack.reply),
      attachments: [
        {
          ...file,
          fetch: async () => {
            whileReading = await ledger.get(KEY);
            return new TextEncoder().encode("hello");
          },
        },
      ],
    });
    // A process taking the turn over while the file downloads finds where it is.
    expect(whileReading?.input?.files).toEqual([file]);
    const asked = provider.requests[0]?.messages.findLast((m) => m.role === "user");
    expect(asked?.content).toContain("hello");
  });

  it("a turn taken over after its files were read asks with what they said once, and with its image fetched again", async () => {
    const notes = { name: "notes.txt", mimeType: "text/plain", size: 5, url: "http://127.0.0.1:9/notes.txt" };
    const cat = { name: "cat.png", mimeType: "image/png", size: 4, url: "http://127.0.0.1:9/cat.png" };
    const provider = new ScriptedProvider([say("A cat.")]);
    let whileAsking: TurnRecord | undefined;
    const first = setup({
      name: "openai",
      listModels: async () => [],
      async *stream(req) {
        whileAsking = await ledger.get(KEY);
        yield* provider.stream(req);
      },
    });
    const onSlack = fakeSlack();
    const fetched: string[] = [];
    const fetching = (file: typeof notes, bytes: Uint8Array) => ({
      ...file,
      fetch: async () => {
        fetched.push(file.url);
        return bytes;
      },
    });
    await first.dispatcher.handle({
      ...aliceSays("e1", "what is this?", onSlack.reply),
      attachments: [
        fetching(notes, new TextEncoder().encode("hello")),
        fetching(cat, new Uint8Array([1, 2, 3, 4])),
      ],
    });
    const askedFirst = provider.requests[0]?.messages.findLast((m) => m.role === "user");
    // As a process that died once the question was asked, before it was saved.
    const input = whileAsking?.input;
    expect(input?.filesNoted).toBe(true);
    expect(input?.files).toEqual([notes, cat]);
    if (!input) throw new Error("the turn kept no question");
    await ledger.begin(KEY, { id: "turn-2", owner: "a-process-that-died", input });
    fetched.length = 0;

    const again = new ScriptedProvider([say("A cat.")]);
    const { dispatcher } = setup(again);
    const slack = fakeSlack();
    slack.adapter.fileFrom = (file) => fetching(file, new Uint8Array([1, 2, 3, 4]));
    await dispatcher.recoverInterrupted([slack.adapter]);

    expect(slack.seen).toEqual(["A cat.", "<finish>"]);
    expect(fetched).toEqual([cat.url]);
    const asked = again.requests[0]?.messages.findLast((m) => m.role === "user");
    expect(asked?.content).toBe(askedFirst?.content);
    expect(asked?.content.match(/\[Attached file: notes\.txt/g)).toHaveLength(1);
    expect(asked?.parts).toEqual([{ type: "image", mimeType: "image/png", data: "AQIDBA==" }]);
  });

  it("a message handed over past its sender's daily budget gets the sentence, and no model request", async () => {
    const provider = new ScriptedProvider([say("Should not be asked.")]);
    const live = setup(provider, createThreadLock(store), { budgets: { perUser: { tokens: 100 } } });
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

  it("a turn whose lock was taken while it ran stops at once: no more text, no note, no save, the taker's record untouched", async () => {
    const cut: Provider = {
      name: "openai",
      listModels: async () => [],
      async *stream(_req, signal): AsyncIterable<ModelEvent> {
        yield { type: "text", delta: "Half an ans" };
        await new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
        yield { type: "text", delta: "wer, never written." };
      },
    };
    const lock = createThreadLock(store, { ttlMs: 5_000, renewEveryMs: 100 });
    const { dispatcher } = setup(cut, lock);
    const slack = fakeSlack();
    const before = (await sessions.get(KEY))!.messages.length;
    const handled = dispatcher.handle(aliceSays("e1", "a long question", slack.reply));
    await vi.waitFor(() => expect(slack.seen).toEqual(["Half an ans"]), { timeout: 5_000 });
    // Another process frees the lease, as for a process whose heartbeat it saw expire, and takes the turn.
    const state = createState(store);
    await state.releaseLock((await state.lockHolder(KEY))!);
    expect(await state.acquireLock(KEY, 60_000, "the-taker")).toBeDefined();
    const taker = new TurnLedger(store);
    await taker.takeOver((await taker.get(KEY))!, "the-taker");
    await handled;

    expect(slack.seen).toEqual(["Half an ans", "<abandon>"]);
    expect(await ledger.get(KEY)).toMatchObject({
      owner: "the-taker",
      takeovers: 1,
      input: { text: "a long question" },
    });
    expect((await sessions.get(KEY))!.messages).toHaveLength(before);
  });
});
