import type { Store } from "./index.js";
import { createState, type StateStore } from "./state.js";

/** Seen-event ids. Slack redelivers for hours and Discord sessions overlap during deploys. */
export interface Dedupe {
  /** True the first time an id is seen within its expiry (default 24 h), false afterwards. */
  firstSight(id: string, ttlMs?: number): Promise<boolean>;
  /** True when the id was seen already (here or by a process sharing the store); marks nothing. */
  seen(id: string): Promise<boolean>;
}

export const DEDUPE_TTL_MS = 24 * 60 * 60 * 1000;

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
 */
export class StoreDedupe implements Dedupe {
  private readonly memory = new MemoryDedupe();

  private readonly state: StateStore;

  constructor(store: Store) {
    this.state = createState(store);
  }

  async firstSight(id: string, ttlMs = DEDUPE_TTL_MS): Promise<boolean> {
    if (this.memory.has(id)) return false;
    this.memory.add(id, ttlMs);
    try {
      return await this.claim(`dedupe:${id}`, ttlMs);
    } catch (err) {
      // Not known to be seen: a redelivery after the store recovers must still get through.
      this.memory.forget(id);
      throw err;
    }
  }

  async seen(id: string): Promise<boolean> {
    if (this.memory.has(id)) return true;
    return (await this.state.get(`dedupe:${id}`)) !== undefined;
  }

  private claim(key: string, ttlMs: number): Promise<boolean> {
    return this.state.setIfAbsent(key, 1, ttlMs);
  }
}

export function createDedupe(store?: Store): Dedupe {
  return store ? new StoreDedupe(store) : new MemoryDedupe();
}
