import { afterEach, expect, it, vi } from "vitest";
import { FunctionHub, say } from "../../test/support/scripted.js";
import { Agent } from "../agent/agent.js";
import type { ModelEvent, ModelRequest, Provider } from "../agent/providers/provider.js";
import { configSchema } from "../config.js";
import type { ChatMessage } from "../core/messages.js";
import type { Store } from "../store/index.js";
import { createThreadLock, type ThreadLock } from "../store/locks.js";
import { type Session, SessionRepository } from "../store/sessions.js";
import { createState } from "../store/state.js";
import { describeEachStore, type TestStores, testStores } from "../store/testing.js";
import { runAfterTurn } from "./after-turn.js";
import type { Reply } from "./contract.js";
import { gate, StallingSessions } from "./stall.test-helper.js";

const KEY = "slack:T1:C1:1712345678.000100";

const exchange = (i: number): ChatMessage[] => [
  { role: "user", content: `question ${i} about the release plans` },
  { role: "assistant", content: `answer ${i}: the release goes out on day ${i}` },
];

/** Well past its budget: three exchanges, of which the fold keeps the last two messages. */
const config = configSchema.parse({ memory: { compressAt: 20, keepMessages: 2 } });

/** A thread's reply as the after-turn jobs see it: only its title. */
function titled(): { reply: Reply; titles: string[] } {
  const titles: string[] = [];
  const reply: Reply = {
    status: async () => undefined,
    stream: () => ({ write: () => undefined, finish: async () => undefined, fail: async () => undefined }),
    upload: async () => undefined,
    title: async (t) => void titles.push(t),
    notice: async () => undefined,
  };
  return { reply, titles };
}

/** The title model and the summary model, each answering once `answer` lets it. */
function models(answer: Promise<void> = Promise.resolve()): Provider {
  return {
    name: "openai",
    listModels: async () => [],
    async *stream(req: ModelRequest): AsyncIterable<ModelEvent> {
      await answer;
      yield* say(
        req.system?.startsWith("You name") ? "Release plans" : "- The release dates of days 1 and 2.",
      );
    },
  };
}

describeEachStore("the title and compression after a turn, on %s", (kind) => {
  let stores: TestStores;
  const locks: ThreadLock[] = [];
  afterEach(async () => {
    await Promise.all(locks.splice(0).map((l) => l.close()));
    await stores.dispose();
  });

  /** A replica: its own store connection, sessions and thread lock on the shared data. */
  async function replica(): Promise<{ store: Store; lock: ThreadLock; sessions: StallingSessions }> {
    const store = await stores.open();
    const lock = createThreadLock(store);
    locks.push(lock);
    return { store, lock, sessions: new StallingSessions(store) };
  }

  /** The thread as its last turn left it: three exchanges, no title yet. */
  async function answeredThrice(sessions: SessionRepository): Promise<Session> {
    const session = await sessions.getOrCreate(KEY);
    session.messages.push(...exchange(1), ...exchange(2), ...exchange(3));
    session.turns = 3;
    await sessions.save(session);
    return structuredClone(session);
  }

  /** The thread's next turn, in another replica: two more messages, saved under its lock. */
  async function nextTurn(other: { lock: ThreadLock; sessions: SessionRepository }): Promise<void> {
    await other.lock.run(KEY, async () => {
      const session = await other.sessions.getOrCreate(KEY);
      session.messages.push(...exchange(4));
      session.turns += 1;
      await other.sessions.save(session);
    });
  }

  it("folds only what it planned while a slow summary model let the next turn save meanwhile", async () => {
    stores = testStores(kind);
    const [a, b] = [await replica(), await replica()];
    const snapshot = await answeredThrice(a.sessions);
    const answer = gate();
    const agent = new Agent({
      config,
      hub: new FunctionHub({}),
      providerFor: () => models(answer.passed),
      sessions: a.sessions,
    });
    const { reply, titles } = titled();
    const job = runAfterTurn(
      snapshot,
      reply,
      { agent, sessions: a.sessions, lock: a.lock },
      new AbortController().signal,
    );
    await nextTurn(b);
    answer.open();
    await job;

    const stored = (await new SessionRepository(await stores.open()).get(KEY))!;
    expect(stored.title).toBe("Release plans");
    expect(stored.summary).toBe("- The release dates of days 1 and 2.");
    expect(stored.messages).toEqual([...exchange(3), ...exchange(4)]);
    expect(await b.sessions.readArchive(KEY)).toEqual([...exchange(1), ...exchange(2)]);
    expect(titles).toEqual(["Release plans"]);
  });

  it("never saves over the next turn's session when it stalls under the lock past its lease, and lands on top of it", async () => {
    stores = testStores(kind);
    const [a, b] = [await replica(), await replica()];
    const snapshot = await answeredThrice(a.sessions);
    const agent = new Agent({
      config,
      hub: new FunctionHub({}),
      providerFor: () => models(),
      sessions: a.sessions,
    });
    const { reply, titles } = titled();
    const go = gate();
    // The job's read of the thread under its lock, the one its save starts from, stalls.
    const stalled = a.sessions.stallNextRead(go.passed);
    const job = runAfterTurn(
      snapshot,
      reply,
      { agent, sessions: a.sessions, lock: a.lock },
      new AbortController().signal,
    );
    await stalled;
    // Stalled past its heartbeat: another replica takes the thread (as it takes a stopped
    // process's lease) and its next turn saves two more messages.
    const state = createState(b.store);
    const lease = await state.lockHolder(KEY);
    expect(lease).toBeDefined();
    await state.releaseLock(lease!);
    await nextTurn(b);
    go.open();
    await job;

    const stored = (await new SessionRepository(await stores.open()).get(KEY))!;
    // The next turn's messages are all there, after those the fold kept.
    expect(stored.messages).toEqual([...exchange(3), ...exchange(4)]);
    expect(stored.turns).toBe(4);
    expect(stored.summary).toBe("- The release dates of days 1 and 2.");
    expect(await b.sessions.readArchive(KEY)).toEqual([...exchange(1), ...exchange(2)]);
    expect(stored.title).toBe("Release plans");
    await vi.waitFor(() => expect(titles).toEqual(["Release plans"]));
  });
});
