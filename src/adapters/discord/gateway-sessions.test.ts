import { afterEach, expect, it } from "vitest";
import { createState, type StateStore } from "../../store/state.js";
import { describeEachStore, type TestStores, testStores } from "../../store/testing.js";
import { GatewaySessions, storedGatewaySessions } from "./gateway-sessions.js";

const ready = (sessionId: string, s: number) => ({
  t: "READY",
  s,
  d: { session_id: sessionId, resume_gateway_url: "ws://127.0.0.1:1", shard: [0, 1], user: { id: "U-bot" } },
});
const message = (id: string, s: number, author = "U-alice") => ({
  t: "MESSAGE_CREATE",
  s,
  d: { id, author: { id: author } },
});

describeEachStore("Discord gateway sessions kept on %s", (kind) => {
  let stores: TestStores;
  let state: StateStore;
  const open: GatewaySessions[] = [];
  const pointOf = async (id: string) =>
    (await storedGatewaySessions(state)).find((s) => s.sessionId === id)?.sequence;

  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close().catch(() => {})));
    await stores.dispose();
  });

  /** Two processes on the same store. */
  async function processes(): Promise<[GatewaySessions, GatewaySessions]> {
    stores = testStores(kind);
    const a = new GatewaySessions(createState(await stores.open()));
    const b = new GatewaySessions(createState(await stores.open()));
    open.push(a, b);
    state = createState(await stores.open());
    return [a, b];
  }

  /** A process started later on the same store. */
  async function another(): Promise<GatewaySessions> {
    const c = new GatewaySessions(createState(await stores.open()));
    open.push(c);
    return c;
  }

  /** The process received sess-a's message m2 (sequence 2), saved, and stopped before settling it. */
  async function stoppedUnsettled(a: GatewaySessions): Promise<void> {
    a.dispatched(0, ready("sess-a", 1));
    a.dispatched(0, message("m2", 2));
    await a.save();
    await a.close();
  }

  it("stores a resume point that never passes a message not yet settled", async () => {
    const [a] = await processes();
    a.dispatched(0, ready("sess-a", 1));
    a.dispatched(0, message("m2", 2));
    a.dispatched(0, message("m3", 3));
    a.dispatched(0, { t: "TYPING_START", s: 4, d: {} });
    // The bot's own post: nothing to answer, nothing to wait for.
    a.dispatched(0, message("m5", 5, "U-bot"));
    await a.save();
    expect(await pointOf("sess-a")).toBe(1);
    a.settled("m2");
    await a.save();
    expect(await pointOf("sess-a")).toBe(2);
    a.settled("m3");
    await a.save();
    expect(await pointOf("sess-a")).toBe(5);
  });

  it("leaves a live process's session alone", async () => {
    const [a, b] = await processes();
    a.dispatched(0, ready("sess-a", 1));
    await a.save();
    expect(await b.orphans()).toEqual([]);
  });

  it("removes a closed session whose messages are all settled", async () => {
    const [a, b] = await processes();
    a.dispatched(0, ready("sess-a", 1));
    a.dispatched(0, message("m2", 2));
    await a.save();
    a.settled("m2");
    await a.close();
    expect(await storedGatewaySessions(state)).toEqual([]);
    expect(await b.orphans()).toEqual([]);
  });

  it("leaves a closed session holding unsettled messages to the next process at once, from before the oldest", async () => {
    const [a, b] = await processes();
    a.dispatched(0, ready("sess-a", 1));
    a.dispatched(0, message("m2", 2));
    await a.save();
    // Came while the process stopped, after its last save.
    a.dispatched(0, message("m3", 3));
    a.dispatched(0, message("m4", 4));
    a.settled("m2");
    a.settled("m4");
    await a.close();
    // Unlocked on close: no wait for the lock to expire.
    const found = await b.orphans();
    expect(found.map((s) => [s.sessionId, s.sequence])).toEqual([["sess-a", 2]]);
  });

  it("hands an orphan it adopted and never read back as it found it", async () => {
    const [a, b] = await processes();
    await stoppedUnsettled(a);
    expect((await b.orphans()).map((s) => s.sessionId)).toEqual(["sess-a"]);
    // Stopped before its replay was read.
    await b.close();
    const c = await another();
    expect((await c.orphans()).map((s) => [s.sessionId, s.sequence])).toEqual([["sess-a", 1]]);
  });

  it("retires an adopted orphan once its replayed messages are settled", async () => {
    const [a, b] = await processes();
    await stoppedUnsettled(a);
    await b.orphans();
    b.adopt("sess-a", [{ id: "m2", s: 2 }], 2);
    await b.save();
    expect(await pointOf("sess-a")).toBe(1);
    b.settled("m2");
    await b.save();
    expect(await storedGatewaySessions(state)).toEqual([]);
  });

  it("hands an orphan back from its first unsettled replayed message when stopped amid the replay", async () => {
    const [a, b] = await processes();
    await stoppedUnsettled(a);
    await b.orphans();
    b.adopt(
      "sess-a",
      [
        { id: "m2", s: 2 },
        { id: "m3", s: 3 },
        { id: "m4", s: 4 },
      ],
      4,
    );
    b.settled("m2");
    b.settled("m4");
    await b.close();
    const c = await another();
    expect((await c.orphans()).map((s) => [s.sessionId, s.sequence])).toEqual([["sess-a", 2]]);
  });
});
