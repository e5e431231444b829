import { setTimeout as sleep } from "node:timers/promises";
import { expect, type MockInstance, vi } from "vitest";
import { StoreLink } from "../../test/support/cut-off-store.js";
import { callTools } from "../../test/support/scripted.js";
import type { ModelEvent, ModelRequest, Provider } from "../agent/providers/provider.js";
import { createThreadLock } from "../store/locks.js";
import type { TurnLedger } from "../store/turns.js";
import type { Adapter, Question, Reply } from "./contract.js";
import type { SetupOptions, TakeoverBed } from "./takeover.test-helper.js";

/*
 * What the tests of a replica cut off from its store share: a short heartbeat, scripted
 * models, a Slack that keeps every replica's writes on one timeline, and replicas whose
 * every store call goes through a link the test can cut.
 */

/** A quarter of the production heartbeat (every 1 s, alive for 4 s, silent after 3 s), for short tests. */
export const BEATS = { everyMs: 250, ttlMs: 1_000, silentAfterMs: 750 };

type Step = ModelEvent[] | ((signal: AbortSignal) => AsyncIterable<ModelEvent>);

/** A model that plays `steps`, one per request, and keeps the requests. */
export function model(...steps: Step[]): Provider & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    name: "openai",
    requests,
    listModels: async () => [],
    async *stream(req, signal) {
      requests.push(structuredClone(req));
      const step = steps.shift();
      if (!step) throw new Error("script exhausted");
      yield* Array.isArray(step) ? step : step(signal);
    },
  };
}

/** An answer that goes on, a word every 20 ms, until its request is aborted. */
export async function* endless(signal: AbortSignal): AsyncIterable<ModelEvent> {
  for (let i = 1; ; i++) {
    yield { type: "text", delta: `word${i} ` };
    await sleep(20, undefined, { signal });
  }
}

export const lookFirst: ModelEvent[] = [
  { type: "text", delta: "Let me look." },
  ...callTools(["fs__read", { path: "a.txt" }]),
];

/**
 * One replica's Slack: each write it makes is a line `who: what` of `timeline`, in the
 * order they land beside the other replica's. Its stream drops what comes after `abandon`,
 * as the real one does ("no write starts after this"). `questions`: where the approval
 * questions it posts go (none are posted without).
 */
export function slackOf(
  who: string,
  timeline: string[],
  questions?: Question[],
): { adapter: Adapter; reply: Reply } {
  const wrote = (what: string) => void timeline.push(`${who}: ${what}`);
  const reply: Reply = {
    status: async (text) => wrote(`<status:${text}>`),
    stream: () => {
      let abandoned = false;
      const unlessAbandoned = (what: string) => {
        if (!abandoned) wrote(what);
      };
      return {
        write: (d) => unlessAbandoned(d),
        finish: async () => unlessAbandoned("<finish>"),
        fail: async (m) => unlessAbandoned(`<fail:${m}>`),
        abandon: async () => {
          abandoned = true;
          wrote("<abandon>");
        },
      };
    },
    upload: async () => wrote("<upload>"),
    title: async () => undefined,
    notice: async (t) => wrote(`<notice:${t}>`),
    // Without a place for questions, the tools run without asking (approvals need buttons).
    ...(questions
      ? {
          ask: async (q: Question) => {
            questions.push(q);
            wrote("<ask>");
            return `q${questions.length}`;
          },
          settle: async () => wrote("<settle>"),
        }
      : {}),
  };
  const adapter: Adapter = {
    platform: "slack",
    start: async () => undefined,
    stop: async () => undefined,
    ready: () => true,
    replyFor: (_key, from) => {
      wrote(`<takes the reply over from "${from.retake ?? ""}">`);
      return reply;
    },
    recover: async (_key, _address, note) => wrote(`<recover:${note}>`),
  };
  return { adapter, reply };
}

/** Resolves once the watcher of `ledger`'s process has looked over the pending turns again. */
export async function nextWatch(pending: MockInstance<TurnLedger["listed"]>): Promise<void> {
  const seen = pending.mock.calls.length;
  await vi.waitFor(() => expect(pending.mock.calls.length).toBeGreaterThan(seen), { timeout: 5_000 });
  await pending.mock.results[seen]?.value;
}

/**
 * A replica on `bed` whose every store call goes through a link of its own (kept in
 * `links`, restored after the test); `late`: see `StoreLink`.
 */
export function cutOffable(
  bed: TakeoverBed,
  links: StoreLink[],
  provider: Provider,
  opts: { late?: boolean } & Omit<SetupOptions, "store" | "lock"> = {},
) {
  const { late, ...setup } = opts;
  const link = new StoreLink({ late: late ?? false });
  links.push(link);
  const store = link.store(bed.store);
  return {
    link,
    ...bed.setup(provider, { ...setup, store, lock: createThreadLock(store, { heartbeat: BEATS }) }),
  };
}
