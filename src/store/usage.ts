import { randomUUID } from "node:crypto";
import type { Platform, ThreadKey } from "../core/thread.js";
import { log } from "../log.js";
import type { Store } from "./index.js";
import { createState, type StateStore } from "./state.js";

/** Who a model call is charged to: the person who asked, where, in which thread. */
export interface Payer {
  platform: Platform;
  user: string;
  channel: string;
  key: ThreadKey;
}

/** One model call as counted: its tokens as the provider reported them, its cost when the model has a price. */
export interface UsageEntry extends Payer {
  id: string;
  at: number;
  model: string;
  /** Every prompt token, the cached ones included. */
  inputTokens: number;
  outputTokens: number;
  /** Of `inputTokens`, those read from the prompt cache. */
  cachedInputTokens?: number;
  /** Of `inputTokens`, those written to the prompt cache. */
  cacheWriteTokens?: number;
  cost?: number;
  /** The call ended before its provider reported usage (stopped, broken off): its tokens are counted here. */
  estimated?: true;
}

export interface UsageTotals {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  /** Of `inputTokens`, those read from the prompt cache (billed at its lower price); absent when none. */
  cachedInputTokens?: number;
  /** US dollars of the calls whose model has a price. */
  cost: number;
  /** Calls whose model has no price: their tokens are counted, their cost is not. */
  unpriced: number;
  /** Calls whose tokens are an estimate (see `UsageEntry.estimated`); absent when none. */
  estimated?: number;
}

export type UsageScope =
  | { user: string; platform: Platform }
  | { channel: string; platform: Platform }
  | { thread: ThreadKey }
  | "all";

/** The UTC day of a time, "2026-11-25": budgets and totals reset at 00:00 UTC. */
export const dayOf = (at: number): string => new Date(at).toISOString().slice(0, 10);

const EMPTY: UsageTotals = { calls: 0, inputTokens: 0, outputTokens: 0, cost: 0, unpriced: 0 };

/**
 * Usage per model call, kept as one list member per call in each list that totals it
 * (the asker's day, the channel's day, the whole day, the thread): a call is counted once
 * however often its record is written, and replicas add to the same lists without
 * reading them first. Totals are sums over a list, which stays small for a person or a
 * channel in a day; the whole day's list is read only for the admins' report.
 */
/** How long a day's usage lists are kept after their last entry: reports and budgets read seven days. */
export const DAY_LISTS_KEPT_MS = 8 * 24 * 60 * 60 * 1000;

export class UsageLedger {
  private readonly state: StateStore;

  constructor(store: Store) {
    this.state = createState(store);
  }

  async record(call: Omit<UsageEntry, "id" | "at">, at = Date.now()): Promise<UsageEntry> {
    const entry: UsageEntry = { id: randomUUID(), at, ...call };
    const member = JSON.stringify(entry);
    const day = dayOf(at);
    await Promise.all([
      // A day's totals are read for a week at most (reports, budgets): kept a day longer.
      this.state.listAddEach(
        [
          listOf({ user: call.user, platform: call.platform }, day),
          listOf({ channel: call.channel, platform: call.platform }, day),
          listOf("all", day),
        ],
        member,
        DAY_LISTS_KEPT_MS,
      ),
      // A thread's lives as long as its conversation.
      this.state.listAdd(listOf({ thread: call.key }, day), member),
    ]);
    return entry;
  }

  async entries(scope: UsageScope, day = dayOf(Date.now())): Promise<UsageEntry[]> {
    const members = await this.state.listMembers(listOf(scope, day));
    return members.flatMap((m) => {
      const entry = parseEntry(m);
      if (!entry) log.warn({ list: listOf(scope, day) }, "a usage entry could not be read; it is left out");
      return entry ? [entry] : [];
    });
  }

  async totals(scope: UsageScope, day = dayOf(Date.now())): Promise<UsageTotals> {
    return sum(await this.entries(scope, day));
  }
}

export function sum(entries: readonly UsageEntry[]): UsageTotals {
  return entries.reduce<UsageTotals>(
    (t, e) => ({
      calls: t.calls + 1,
      inputTokens: t.inputTokens + e.inputTokens,
      outputTokens: t.outputTokens + e.outputTokens,
      ...(t.cachedInputTokens || e.cachedInputTokens
        ? { cachedInputTokens: (t.cachedInputTokens ?? 0) + (e.cachedInputTokens ?? 0) }
        : {}),
      cost: t.cost + (e.cost ?? 0),
      unpriced: t.unpriced + (e.cost === undefined ? 1 : 0),
      ...(t.estimated || e.estimated ? { estimated: (t.estimated ?? 0) + (e.estimated ? 1 : 0) } : {}),
    }),
    { ...EMPTY },
  );
}

/**
 * A thread's list is not per day: its total is the thread's whole life. No name is
 * another's prefix followed by ":" (the SQL stores find a list's members by prefix).
 */
function listOf(scope: UsageScope, day: string): string {
  if (scope === "all") return `usage:all:${day}`;
  if ("thread" in scope) return `usage:thread:${scope.thread}`;
  if ("user" in scope) return `usage:user:${day}:${scope.platform}:${scope.user}`;
  return `usage:channel:${day}:${scope.platform}:${scope.channel}`;
}

function parseEntry(member: string): UsageEntry | undefined {
  try {
    const e = JSON.parse(member) as Partial<UsageEntry>;
    if (typeof e.inputTokens !== "number" || typeof e.outputTokens !== "number" || typeof e.user !== "string")
      return undefined;
    return e as UsageEntry;
  } catch {
    return undefined;
  }
}
