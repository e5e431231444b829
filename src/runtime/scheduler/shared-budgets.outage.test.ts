import { afterEach, beforeEach, expect, it, vi } from "vitest";
import type { StateStore } from "../../store/state-store.js";
import type { WritePolicy } from "./budgets.js";
import { BUDGET_SYNC_MS, SharedBudgets } from "./shared-budgets.js";
import { WriteScheduler } from "./write-scheduler.js";

/** "posts": 3 per 10 s, a short window (shares); "tier": 7 a minute, a long one (claims). */
const policy: WritePolicy = {
  limitOf(bucket) {
    if (bucket === "posts") return { capacity: 3, windowMs: 10_000 };
    if (bucket === "tier") return { capacity: 7, windowMs: 60_000 };
    return undefined;
  },
};

/**
 * A store with another replica's record in it, kept in memory, whose every read of the
 * replicas' list fails (`failing`) or never answers (`hanging`) once the store goes down.
 */
function storeGoingDown() {
  let mode: "up" | "failing" | "hanging" = "up";
  const values = new Map<string, unknown>([["budget:test:other", { spent: {}, paused: {}, learned: [] }]]);
  const members = new Set(["other"]);
  const store = {
    listMembers: async () => {
      if (mode === "failing") throw new Error("store down");
      if (mode === "hanging") return new Promise<string[]>(() => {});
      return [...members];
    },
    get: async (key: string) => values.get(key),
    set: async (key: string, value: unknown) => void values.set(key, value),
    listAdd: async (_list: string, member: string) => void members.add(member),
    listRemove: async (_list: string, member: string) => void members.delete(member),
    acquireLock: async (key: string) => ({ key, token: "t" }),
    releaseLock: async () => undefined,
  };
  const become = (how: typeof mode) => {
    mode = how;
  };
  return { state: store as unknown as StateStore, become };
}

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

/**
 * A replica that knows it shares its budgets with one other, with a scheduler on them,
 * whose picks are counted (each asks the budgets how long its waiting writes wait).
 */
async function replicaOfTwo() {
  const store = storeGoingDown();
  const budgets = new SharedBudgets(policy, store.state, "test");
  await budgets.sync();
  await budgets.sync();
  const asked = vi.spyOn(budgets, "wait");
  return { budgets, store, asked, scheduler: new WriteScheduler(budgets) };
}

const write = (s: WriteScheduler, bucket: string) =>
  s.run({ lane: "final", buckets: [bucket], run: async () => undefined });

it("looks a sync period later, not every millisecond, for the share of a window when the store refuses its sync", async () => {
  const { budgets, store, asked, scheduler } = await replicaOfTwo();
  store.become("failing");
  // Its share of "posts" (one of three) goes at once; the second write waits for the next sync.
  await write(scheduler, "posts");
  const waiting = write(scheduler, "posts");
  await vi.advanceTimersByTimeAsync(300);
  asked.mockClear();
  await vi.advanceTimersByTimeAsync(100);
  // It waited 1 ms at a time: about 100 picks here, until the store came back.
  expect(asked.mock.calls.length).toBeLessThanOrEqual(3);
  store.become("up");
  await vi.advanceTimersByTimeAsync(BUDGET_SYNC_MS);
  await waiting;
  await budgets.close();
});

it("looks less and less often for a claim on a long window while the store's sync never answers", async () => {
  const { store, asked, scheduler } = await replicaOfTwo();
  store.become("hanging");
  // The window has room for a first write without a claim; the second waits for one.
  await write(scheduler, "tier");
  write(scheduler, "tier");
  await vi.advanceTimersByTimeAsync(1_000);
  asked.mockClear();
  await vi.advanceTimersByTimeAsync(1_000);
  // It looked every 10 ms (CLAIM_RETRY_MS): about 100 picks here, for as long as the store hung.
  expect(asked.mock.calls.length).toBeLessThanOrEqual(5);
  expect(scheduler.backlog().final).toBe(1);
});
