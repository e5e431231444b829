import { afterEach, expect, it } from "vitest";
import type { ChatMessage } from "../core/messages.js";
import { LockLost } from "./locks.js";
import { SessionRepository } from "./sessions.js";
import { createState } from "./state.js";
import { describeEachStore, type TestStores, testStores } from "./testing.js";

const KEY = "slack:T1:C1:1712345678.000100";

/** One exchange with a tool call, so that nested arrays and tool messages are in every round trip. */
function exchange(i: number): ChatMessage[] {
  return [
    { role: "user", content: `question ${i}`, author: "ana", parts: [{ type: "text", text: `part ${i}` }] },
    {
      role: "assistant",
      content: "",
      toolCalls: [
        { id: `call_${i}`, name: "fs__read", arguments: { path: `/tmp/${i}`, lines: [1, [2, 3]] } },
      ],
    },
    { role: "tool", toolCallId: `call_${i}`, name: "fs__read", content: `contents ${i}`, isError: false },
    { role: "assistant", content: `answer ${i}` },
  ];
}

describeEachStore("SessionRepository on %s", (kind) => {
  let stores: TestStores;
  afterEach(async () => {
    await stores.dispose();
  });

  async function repo(): Promise<SessionRepository> {
    return new SessionRepository(await stores.open());
  }

  it("returns a fresh unsaved session for a thread it has never seen", async () => {
    stores = testStores(kind);
    const sessions = await repo();
    const s = await sessions.getOrCreate(KEY);
    expect(s).toMatchObject({ key: KEY, messages: [], turns: 0, generation: 0, archivedCount: 0 });
    expect(await sessions.get(KEY)).toBeUndefined();
  });

  it("returns the session it saved, tool calls and settings included", async () => {
    stores = testStores(kind);
    const sessions = await repo();
    const s = await sessions.getOrCreate(KEY);
    s.messages.push(...exchange(1));
    s.title = "Reading files";
    s.settings = { model: "gpt-x", servers: ["fs", "github"] };
    s.usage = { inputTokens: 10, outputTokens: 5 };
    s.turns = 1;
    await sessions.save(s);
    expect(await sessions.get(KEY)).toEqual(s);
  });

  it("still has the session after the store is closed and opened again", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    const s = await new SessionRepository(store).getOrCreate(KEY);
    s.messages.push(...exchange(1));
    await new SessionRepository(store).save(s);
    await store.close();
    const reopened = new SessionRepository(await stores.open());
    expect(await reopened.get(KEY)).toEqual(s);
  });

  it("archives messages into chunk records and reads them back oldest first", async () => {
    stores = testStores(kind);
    const sessions = await repo();
    const s = await sessions.getOrCreate(KEY);
    for (let i = 0; i < 3; i++) await sessions.archive(s, exchange(i));
    await sessions.save(s);
    expect(s).toMatchObject({ archiveChunks: 3, archivedCount: 12 });
    expect(await sessions.readArchive(KEY)).toEqual([...exchange(0), ...exchange(1), ...exchange(2)]);
  });

  it("archives by key: loads, counts and saves the stored session", async () => {
    stores = testStores(kind);
    const sessions = await repo();
    await sessions.save(await sessions.getOrCreate(KEY));
    await sessions.archive(KEY, exchange(7));
    expect(await sessions.get(KEY)).toMatchObject({ archiveChunks: 1, archivedCount: 4 });
    expect(await sessions.readArchive(KEY)).toEqual(exchange(7));
  });

  it("writes the same amount per save whether 1 or 200 chunks are archived", async () => {
    stores = testStores(kind);
    const sessions = await repo();
    const s = await sessions.getOrCreate(KEY);
    const perSave: number[] = [];
    for (let turn = 0; turn < 200; turn++) {
      s.messages.push(...exchange(turn));
      // The agent's compression: the window keeps the newest two exchanges.
      if (s.messages.length > 8) await sessions.archive(s, s.messages.splice(0, 4));
      s.turns++;
      const before = sessions.bytesWritten;
      await sessions.save(s);
      perSave.push(sessions.bytesWritten - before);
    }
    expect(s.archiveChunks).toBe(198);
    const early = perSave[10] ?? 0;
    const late = perSave[199] ?? 0;
    // Only counters and numbers in the text grow by a few digits.
    expect(late).toBeLessThan(early * 1.1);
    expect(late).toBeLessThan(JSON.stringify(await sessions.readArchive(KEY)).length / 20);
  });

  it("starts a fresh session on reset and forgets the archive, keeping the thread's settings", async () => {
    stores = testStores(kind);
    const sessions = await repo();
    const s = await sessions.getOrCreate(KEY);
    s.settings = { model: "m1" };
    s.messages.push(...exchange(2));
    s.title = "old";
    await sessions.archive(s, exchange(1));
    await sessions.save(s);
    const fresh = await sessions.reset(KEY);
    expect(fresh).toMatchObject({ messages: [], archiveChunks: 0, generation: 1, settings: { model: "m1" } });
    expect(fresh.title).toBeUndefined();
    expect(await sessions.get(KEY)).toEqual(fresh);
    expect(await sessions.readArchive(KEY)).toEqual([]);
  });

  it("refuses a late save of a turn that began before the reset", async () => {
    stores = testStores(kind);
    const sessions = await repo();
    const old = await sessions.getOrCreate(KEY);
    await sessions.save(old);
    await sessions.reset(KEY);
    old.messages.push(...exchange(1));
    await sessions.save(old);
    expect(await sessions.get(KEY)).toMatchObject({ messages: [], generation: 1 });
  });

  it("refuses the late save when it comes through another replica's repository", async () => {
    stores = testStores(kind);
    const a = new SessionRepository(await stores.open());
    const old = await a.getOrCreate(KEY);
    const b = new SessionRepository(await stores.open());
    await b.reset(KEY);
    old.messages.push(...exchange(1));
    await a.save(old);
    expect((await b.get(KEY))?.messages).toEqual([]);
  });

  it("saves and archives under a lease only while it is held: the thread's new holder's session stays", async () => {
    stores = testStores(kind);
    const [storeA, storeB] = [await stores.open(), await stores.open()];
    const [a, b] = [new SessionRepository(storeA), new SessionRepository(storeB)];
    const lease = (await createState(storeA).acquireLock(KEY, 60_000))!;
    const stale = await a.getOrCreate(KEY);
    stale.messages.push(...exchange(1));
    await a.save(stale, lease);
    // The holder stalled; another process took the thread and saved its next turn.
    await createState(storeB).releaseLock(lease);
    const newer = (await b.get(KEY))!;
    newer.messages.push(...exchange(2));
    await b.save(newer);
    await expect(a.archive(stale, exchange(1), lease)).rejects.toBeInstanceOf(LockLost);
    await expect(a.save(stale, lease)).rejects.toBeInstanceOf(LockLost);
    expect((await b.get(KEY))?.messages).toEqual([...exchange(1), ...exchange(2)]);
    expect(await b.readArchive(KEY)).toEqual([]);
  });

  it("starts a new conversation under a lease only while it is held, and says a save was lost to the new holder's /new", async () => {
    stores = testStores(kind);
    const [storeA, storeB] = [await stores.open(), await stores.open()];
    const [a, b] = [new SessionRepository(storeA), new SessionRepository(storeB)];
    const lease = (await createState(storeA).acquireLock(KEY, 60_000))!;
    const stale = await a.getOrCreate(KEY);
    stale.messages.push(...exchange(1));
    await a.save(stale, lease);
    // Taken by another process, whose thread moves on to a new conversation and a turn in it.
    await createState(storeB).releaseLock(lease);
    const fresh = await b.reset(KEY);
    fresh.messages.push(...exchange(2));
    await b.save(fresh);
    await expect(a.reset(KEY, lease)).rejects.toBeInstanceOf(LockLost);
    await expect(a.save(stale, lease)).rejects.toBeInstanceOf(LockLost);
    expect(await b.get(KEY)).toMatchObject({ generation: 1, messages: exchange(2) });
  });
});
