import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Claims } from "./claims.js";
import { HEARTBEAT } from "./heartbeat.js";
import type { Store } from "./index.js";
import { createState, type StateStore } from "./state.js";

/** Seen-event ids. Slack redelivers for hours and Discord sessions overlap during deploys. */
export interface Dedupe {
  /** True the first time an id is seen within its expiry (default 24 h), false afterwards. */
  firstSight(id: string, ttlMs?: number): Promise<boolean>;
  /** True when the id was seen already (here or by a process sharing the store); marks nothing. */
  seen(id: string): Promise<boolean>;
  /**
   * The claims `ids` for the write that stores their message (kept while it waits, its
   * turn's record, handed over) to hold in the same step (see `StateStore.setClaiming`):
   * from then on a redelivery of it is not taken. Refused (`ClaimLost`) when a claim is
   * another process's now: this one stalled past its heartbeat, and that one took the
   * message over as a dead process's (see `redelivered`). None with one process alone.
   */
  holding(ids: readonly string[]): Claims | undefined;
  /**
   * A redelivery of `id` (the platform had no acknowledgement of it) that `firstSight`
   * found seen: true when it is this process's to answer after all, as the process that
   * saw it stopped before it held it (`holding`), or its claim expired meanwhile. A claimant that still beats (`alive`) is given a heartbeat's life to hold
   * it or to stop; none with `waits` false (the message's other ids: see `accept`).
   */
  redelivered(id: string, alive: (owner: string) => Promise<boolean>, waits?: boolean): Promise<boolean>;
  /**
   * Gives back an id this process claimed for a copy it drops after all (another copy won
   * the message's other ids): a redelivery of it that waits for this claim takes it then.
   */
  release(id: string): Promise<void>;
}

export const DEDUPE_TTL_MS = 24 * 60 * 60 * 1000;

/** How long a redelivery waits for the live process that claimed it: its heartbeat's life, and a second more. */
export const RECLAIM_WAIT_MS = HEARTBEAT.ttlMs + 1_000;
const RECLAIM_POLL_MS = 250;
/** A claim's value: its process's owner name, and this prefix once the message is held. */
const HELD = "held:";
/** What a given-back claim holds for the millisecond before it expires (no process has that name). */
const RELEASED = "released";

/**
 * Ids with their expiry in insertion order (a Map keeps it), so the oldest go first when
 * the map is full. Bounded: a busy workspace sends far more events than a day of memory needs.
 */
export class MemoryDedupe implements Dedupe {
  private readonly expiries = new Map<string, number>();

  constructor(private readonly maxEntries = 50_000) {}

  async firstSight(id: string, ttlMs = DEDUPE_TTL_MS): Promise<boolean> {
    if (this.has(id)) return false;
    this.add(id, ttlMs);
    return true;
  }

  async seen(id: string): Promise<boolean> {
    return this.has(id);
  }

  /** One process: nothing to tell another, and nobody to take a message over. */
  holding(): undefined {
    return undefined;
  }

  /** One process: a redelivery is a copy like any other, seen already. */
  async redelivered(): Promise<boolean> {
    return false;
  }

  /** One process: its copies are checked one by one, so none wins a part of a message's ids. */
  async release(): Promise<void> {}

  has(id: string, now = Date.now()): boolean {
    const expires = this.expiries.get(id);
    if (expires === undefined) return false;
    if (expires > now) return true;
    this.expiries.delete(id);
    return false;
  }

  add(id: string, ttlMs: number, now = Date.now()): void {
    this.expiries.delete(id);
    this.expiries.set(id, now + ttlMs);
    for (const [oldest, expires] of this.expiries) {
      if (this.expiries.size <= this.maxEntries && expires > now) break;
      this.expiries.delete(oldest);
    }
  }

  forget(id: string): void {
    this.expiries.delete(id);
  }
}

/**
 * The memory map in front of the store. The id is claimed in memory before the store is
 * asked, so two deliveries racing in one process cannot both pass; the store claim is
 * atomic too (the state store's set-if-absent), so replicas and a restarted process agree.
 * A claim names its process (`owner`, as its leases do), so a redelivery of a message
 * whose process stopped before it was stored can be answered by another.
 */
export class StoreDedupe implements Dedupe {
  private readonly memory = new MemoryDedupe();

  private readonly state: StateStore;

  constructor(
    store: Store,
    private readonly owner: string = randomUUID(),
    private readonly patienceMs = RECLAIM_WAIT_MS,
  ) {
    this.state = createState(store);
  }

  /** In memory first; a store that fails leaves the id unseen, so a redelivery after it recovers gets through. */
  async firstSight(id: string, ttlMs = DEDUPE_TTL_MS): Promise<boolean> {
    if (this.memory.has(id)) return false;
    this.memory.add(id, ttlMs);
    try {
      return await this.claim(`dedupe:${id}`, ttlMs);
    } catch (err) {
      this.memory.forget(id);
      throw err;
    }
  }

  async seen(id: string): Promise<boolean> {
    if (this.memory.has(id)) return true;
    return (await this.state.get(`dedupe:${id}`)) !== undefined;
  }

  holding(ids: readonly string[]): Claims {
    const held = `${HELD}${this.owner}`;
    return {
      keys: ids.map((id) => `dedupe:${id}`),
      mine: [this.owner, held],
      value: held,
      ttlMs: DEDUPE_TTL_MS,
    };
  }

  async redelivered(id: string, alive: (owner: string) => Promise<boolean>, waits = true): Promise<boolean> {
    // Not in front of the memory map: a copy this process dropped as seen may be a dead process's.
    const taken = await this.reclaim(`dedupe:${id}`, alive, waits ? this.patienceMs : 0);
    if (taken) this.memory.add(id, DEDUPE_TTL_MS);
    return taken;
  }

  async release(id: string): Promise<void> {
    this.memory.forget(id);
    // No delete-if-mine in the state store: the claim, still this process's, expires at once.
    await this.state.replaceIf(`dedupe:${id}`, this.owner, RELEASED, 1);
  }

  private async reclaim(
    key: string,
    alive: (owner: string) => Promise<boolean>,
    patienceMs: number,
  ): Promise<boolean> {
    const until = Date.now() + patienceMs;
    for (;;) {
      if (await this.claim(key, DEDUPE_TTL_MS)) return true;
      const holder = await this.state.get<unknown>(key);
      // Held, this process's own, or a claim of a version that named no process (`1`).
      if ((holder !== undefined && typeof holder !== "string") || holder === this.owner) return false;
      if (typeof holder === "string" && holder.startsWith(HELD)) return false;
      // Its claimant stopped: taken over, unless it was held or taken meanwhile (read again then).
      // Undefined: expired between the two reads, claimed afresh on the next round.
      if (typeof holder === "string" && !(await alive(holder))) {
        if (await this.state.replaceIf(key, holder, this.owner, DEDUPE_TTL_MS)) return true;
      }
      if (Date.now() >= until) return false;
      await sleep(RECLAIM_POLL_MS);
    }
  }

  private claim(key: string, ttlMs: number): Promise<boolean> {
    return this.state.setIfAbsent(key, this.owner, ttlMs);
  }
}

/** `owner`: the process's name as its thread leases give it (`ThreadLock.owner`). */
export function createDedupe(store?: Store, owner?: string): Dedupe {
  return store ? new StoreDedupe(store, owner) : new MemoryDedupe();
}
