import type { Store } from "./index.js";

/** Seen-event ids. Slack redelivers for hours and Discord sessions overlap during deploys. */
export interface Dedupe {
  /** True the first time an id is seen within its expiry (default 24 h), false afterwards. */
  firstSight(id: string, ttlMs?: number): Promise<boolean>;
}

export const DEDUPE_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * Ids with their expiry in insertion order (a Map keeps it), so the oldest go first when
 * the map is full. Bounded: a busy workspace sends far more events than a day of memory needs.
 */
export class MemoryDedupe implements Dedupe {
  private readonly seen = new Map<string, number>();

  constructor(private readonly maxEntries = 50_000) {}

  async firstSight(id: string, ttlMs = DEDUPE_TTL_MS): Promise<boolean> {
    if (this.has(id)) return false;
    this.add(id, ttlMs);
    return true;
  }

  has(id: string, now = Date.now()): boolean {
    const expires = this.seen.get(id);
    if (expires === undefined) return false;
    if (expires > now) return true;
    this.seen.delete(id);
    return false;
  }

  add(id: string, ttlMs: number, now = Date.now()): void {
    this.seen.delete(id);
    this.seen.set(id, now + ttlMs);
    for (const [oldest, expires] of this.seen) {
      if (this.seen.size <= this.maxEntries && expires > now) break;
      this.seen.delete(oldest);
    }
  }

  forget(id: string): void {
    this.seen.delete(id);
  }
}

/**
 * The memory map in front of the store. The id is claimed in memory before the store is
 * asked, so two deliveries racing in one process cannot both pass; the store claim is
 * atomic too (SET NX PX on Redis, one conditional upsert in SQL), so replicas and a
 * restarted process agree.
 */
export class StoreDedupe implements Dedupe {
  private readonly memory = new MemoryDedupe();

  constructor(private readonly store: Store) {}

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

  private async claim(key: string, ttlMs: number): Promise<boolean> {
    const { redis, sql, namespace } = this.store;
    if (redis) {
      const ok = await redis.set(`${namespace}:${key}`, "1", {
        condition: "NX",
        expiration: { type: "PX", value: ttlMs },
      });
      return ok === "OK";
    }
    if (sql) {
      // Keyv's row format (`ns:key`, `{"value":…,"expires":…}`), so keyv reads these rows as its own.
      const now = Date.now();
      const row = JSON.stringify({ value: 1, expires: now + ttlMs });
      const t = sql.table;
      const query =
        this.store.kind === "postgres"
          ? `INSERT INTO ${t} (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value
             WHERE (${t}.value::jsonb->>'expires')::bigint < $3 RETURNING key`
          : `INSERT INTO ${t} (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value
             WHERE json_extract(${t}.value, '$.expires') < ? RETURNING key`;
      const rows = await sql.query(query, [`${namespace}:${key}`, row, now]);
      return rows.length > 0;
    }
    if ((await this.store.kv.get(key)) !== undefined) return false;
    await this.store.kv.set(key, 1, ttlMs);
    return true;
  }
}

export function createDedupe(store?: Store): Dedupe {
  return store ? new StoreDedupe(store) : new MemoryDedupe();
}
