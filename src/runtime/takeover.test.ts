import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ScriptedProvider, say } from "../../test/support/scripted.js";
import type { ModelEvent, Provider } from "../agent/providers/provider.js";
import type { ToolMessage } from "../core/messages.js";
import type { Store } from "../store/index.js";
import { createThreadLock } from "../store/locks.js";
import type { SessionRepository } from "../store/sessions.js";
import { createState } from "../store/state.js";
import { TurnLedger, type TurnRecord } from "../store/turns.js";
import { INTERRUPTED_NOTE } from "./dispatcher.js";
import { ALICE, aliceSays, fakeSlack, KEY, TakeoverBed } from "./takeover.test-helper.js";
import { MAX_RESUMES, MAX_TAKEOVERS, MAY_HAVE_RUN } from "./turn.js";

describe("taking over a turn whose process died", () => {
  let bed: TakeoverBed;
  let store: Store;
  let sessions: SessionRepository;
  let ledger: TurnLedger;
  let setup: TakeoverBed["setup"];
  let leftBy: TakeoverBed["leftBy"];
  let askedAlready: TakeoverBed["askedAlready"];

  beforeEach(async () => {
    bed = await TakeoverBed.open();
    ({ store, sessions, ledger, setup, leftBy, askedAlready } = bed);
  });

  afterEach(() => bed.close());

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

  it("does not run again a call of the first step, cut off before the question was saved, and asks with the question once", async () => {
    // The question is saved with the first step's results: here neither was.
    await leftBy("a-process-that-died", {
      address: { messages: ["1712345679.000200"] },
      calling: {
        assistant: {
          role: "assistant",
          content: "",
          toolCalls: [{ id: "c1", name: "fs__write", arguments: { path: "a.txt" } }],
        },
        asks: ["c1"],
        settled: [],
      },
    });
    const provider = new ScriptedProvider([say("I cannot tell whether a.txt was written.")]);
    const { dispatcher, hub } = setup(provider);
    const slack = fakeSlack();

    expect(await dispatcher.recoverInterrupted([slack.adapter])).toBe(1);

    expect(hub.calls).toEqual([]);
    const asked = provider.requests[0]!.messages;
    expect(asked.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(asked.findLast((m) => m.role === "tool")?.content).toBe(MAY_HAVE_RUN);
    const session = await sessions.get(KEY);
    expect(session?.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(session?.messages[0]).toMatchObject({ content: "write the file, then read it", turn: "turn-1" });
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
    const { dispatcher } = setup(provider, { lock: createThreadLock(store) });
    const other = createThreadLock(store);
    await other.others();
    await leftBy(other.owner);
    const slack = fakeSlack();

    expect(await dispatcher.recoverInterrupted([slack.adapter])).toBe(0);
    expect(provider.requests).toHaveLength(0);
    expect(await ledger.pending()).toHaveLength(1);
    await other.close();
  });

  it("a store that cannot say whether a turn's process beats leaves the turn for the next round, at start and in the watch", async () => {
    const provider = new ScriptedProvider([say("never")]);
    const lock = createThreadLock(store);
    const { dispatcher } = setup(provider, { lock });
    const other = createThreadLock(store);
    await other.others();
    await leftBy(other.owner);
    const alive = vi.spyOn(lock, "alive").mockRejectedValue(new Error("connection reset"));
    const unhandled: unknown[] = [];
    const note = (err: unknown) => void unhandled.push(err);
    process.on("unhandledRejection", note);
    try {
      expect(await dispatcher.recoverInterrupted([fakeSlack().adapter])).toBe(0);
      const asked = alive.mock.calls.length;
      await vi.waitFor(() => expect(alive.mock.calls.length).toBeGreaterThan(asked), { timeout: 5_000 });
      await new Promise((r) => setTimeout(r, 50));
      expect(unhandled).toEqual([]);
      expect(provider.requests).toHaveLength(0);
      expect(await ledger.pending()).toHaveLength(1);
    } finally {
      process.off("unhandledRejection", note);
      alive.mockRestore();
      await other.close();
    }
  });

  // Resumed by its own process each time its work stalled the process past the heartbeat, it would never end.
  it.each([
    [`taken over ${MAX_TAKEOVERS} times`, { takeovers: MAX_TAKEOVERS }],
    [`its own process went on with ${MAX_RESUMES} times`, { resumes: MAX_RESUMES }],
  ])("ends a turn %s already with the restart note", async (_, counts) => {
    await leftBy("a-process-that-died", counts);
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

  it("a Stop of the cut-off answer finished before a new message stops that answer alone: the messages after it are answered", async () => {
    const asked: string[] = [];
    const provider: Provider = {
      name: "openai",
      listModels: async () => [],
      async *stream(req, signal): AsyncIterable<ModelEvent> {
        const last = req.messages.findLast((m) => m.role === "user");
        const text = typeof last?.content === "string" ? last.content : "";
        asked.push(text);
        if (text !== "write the file, then read it") {
          yield* say(`About "${text}".`);
          return;
        }
        yield { type: "text", delta: "Writing it" };
        await new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
      },
    };
    const { dispatcher } = setup(provider);
    const slack = fakeSlack();
    expect(await dispatcher.recoverInterrupted([slack.adapter])).toBe(0);
    // Cut off with a message handed over behind it, answered after it and before the new one.
    const meanwhile = { text: "meanwhile", user: ALICE, channel: "C1", sentAt: 1 };
    await leftBy("a-process-that-died", { address: { messages: ["1.1"] }, queued: [meanwhile] });
    const fresh = fakeSlack();
    const handled = dispatcher.handle(aliceSays("e2", "and another thing", fresh.reply));
    await vi.waitFor(() => expect(slack.seen).toEqual(["Writing it"]), { timeout: 5_000 });

    expect(await dispatcher.stop(KEY, ALICE)).toBe("");
    await handled;

    expect(asked).toEqual(["write the file, then read it", "meanwhile", "and another thing"]);
    expect(slack.seen).toEqual(["Writing it", "<fail:Stopped by alice.>", 'About "meanwhile".', "<finish>"]);
    expect(fresh.seen).toEqual(['About "and another thing".', "<finish>"]);
    expect(await ledger.pending()).toEqual([]);
  });

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

  it("a turn's record keeps why a file could not be read, and a process taking it over before its files were read tells the model", async () => {
    const why = "Slack would not say what this file is (file_not_found), so it could not be read";
    const notes = { name: "notes.txt", mimeType: "text/plain", size: 5, url: "http://127.0.0.1:9/notes.txt" };
    const hello = async () => new TextEncoder().encode("hello");
    const provider = new ScriptedProvider([say("One of them I could not read.")]);
    const first = setup(provider);
    let whileReading: TurnRecord | undefined;
    await first.dispatcher.handle({
      ...aliceSays("e1", "compare these", fakeSlack().reply),
      attachments: [
        { name: "F0001", mimeType: "application/octet-stream", size: 0, unreadable: why, fetch: hello },
        {
          ...notes,
          fetch: async () => {
            whileReading = await ledger.get(KEY);
            return hello();
          },
        },
      ],
    });
    const askedFirst = provider.requests[0]?.messages.findLast((m) => m.role === "user");
    expect(askedFirst?.content).toContain(`[Attached file: F0001; ${why}]`);
    // As a process that died while the notes downloaded: its question not yet asked.
    const input = whileReading?.input;
    expect(input?.files).toEqual([{ name: "F0001", unreadable: why }, notes]);
    if (!input) throw new Error("the turn kept no question");
    await ledger.begin(KEY, { id: "turn-2", owner: "a-process-that-died", input });

    const again = new ScriptedProvider([say("One of them I could not read.")]);
    const { dispatcher } = setup(again);
    const slack = fakeSlack();
    slack.adapter.fileFrom = (file) => ({ ...file, fetch: hello });
    await dispatcher.recoverInterrupted([slack.adapter]);

    expect(slack.seen).toEqual(["One of them I could not read.", "<finish>"]);
    const asked = again.requests[0]?.messages.findLast((m) => m.role === "user");
    expect(asked?.content).toBe(askedFirst?.content);
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
    // Named as the stored text names it, so that a provider that leaves it out can say so there.
    const label = "cat.png (image/png, 4 B)";
    expect(asked?.parts).toEqual([{ type: "image", mimeType: "image/png", data: "AQIDBA==", label }]);
    expect(asked?.content).toContain(`[Attached image: ${label}, shown to you as an image]`);
  });
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
    const { dispatcher } = setup(cut, { lock });
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
