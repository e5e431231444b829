import type { RedisClient, SqlAccess, Store } from "./index.js";
import * as lua from "./lease-tokens.js";
import { type Lease, lockKey, newLease } from "./lease-tokens.js";

export { type Lease, leaseOwner } from "./lease-tokens.js";

/**
 * The small state interface everything that must outlive a process or be shared between
 * replicas uses, the same on every backend, so no caller branches on SQLite, Redis or
 * PostgreSQL. Values are JSON. Keys live in the store's namespace.
 */
export interface StateStore {
  get<T>(key: string): Promise<T | undefined>;
  set<T>(key: string, value: T, ttlMs?: number): Promise<void>;
  delete(key: string): Promise<void>;
  /** Writes only when the key is absent or expired; true when this call wrote it. */
  setIfAbsent<T>(key: string, value: T, ttlMs: number): Promise<boolean>;
  /**
   * Writes `value` (a string, expiring after `ttlMs`) only while `key` holds the string
   * `expected` and has not expired, in one atomic step; true when this call wrote it.
   */
  replaceIf(key: string, expected: string, value: string, ttlMs: number): Promise<boolean>;
  /**
   * The lock, or undefined when someone else holds it; it expires after `ttlMs` unless
   * extended. `owner` goes into the token, so others can tell whose lease it is.
   */
  acquireLock(key: string, ttlMs: number, owner?: string): Promise<Lease | undefined>;
  /** The lease someone holds on `key` now, if any. */
  lockHolder(key: string): Promise<Lease | undefined>;
  /** False when the lease was lost (it expired and someone else took it). */
  extendLock(lease: Lease, ttlMs: number): Promise<boolean>;
  releaseLock(lease: Lease): Promise<void>;
  /** True while `lease` is held (not released, expired or taken by someone else). */
  holds(lease: Lease): Promise<boolean>;
  /**
   * Writes `key` only while `lease` is held, in one atomic step: the fence that keeps a
   * process that lost its lock (it stalled past its heartbeat, and another took the
   * thread over) from overwriting what the new holder wrote. False when it did not write.
   */
  setIfHolding<T>(lease: Lease, key: string, value: T): Promise<boolean>;
  /**
   * `setIfHolding` for a value read through the store's keyv (`store.kv.get`: a session,
   * its archive), written as keyv writes it, without expiry.
   */
  kvSetIfHolding<T>(lease: Lease, key: string, value: T): Promise<boolean>;
  /** Deletes `key` only while `lease` is held; false when it did not. */
  deleteIfHolding(lease: Lease, key: string): Promise<boolean>;
  /**
   * A set of strings under one name (pending turns, waiting interactions). On SQL a list's
   * members are the rows under `list:{name}:`, so no list may be named another's name
   * followed by a colon.
   */
  listAdd(list: string, member: string): Promise<void>;
  /**
   * Adds `member` to each of `lists` in one round trip (a usage entry goes to four totals).
   * `ttlMs`: the members go once that long has passed without an addition (Redis: the
   * whole set; SQL: each member's row, at the next sweep), as a past day's totals must.
   */
  listAddEach(lists: readonly string[], member: string, ttlMs?: number): Promise<void>;
  listRemove(list: string, member: string): Promise<void>;
  /**
   * `listRemove` only while `lease` is held, in one atomic step; true when this call removed
   * the member. A process that lost a thread's lock must not take off a list what the new
   * holder put on it.
   */
  listRemoveIfHolding(lease: Lease, list: string, member: string): Promise<boolean>;
  listMembers(list: string): Promise<string[]>;
}

export function createState(store: Store): StateStore {
  if (store.redis) return new RedisState(store, store.redis);
  if (store.sql) return new SqlState(store, store.sql);
  throw new Error(`No state implementation for a ${store.kind} store`);
}

/** A list member's row on SQL, as keyv writes `set(key, 1)` without expiry. */
const LIST_ROW = JSON.stringify({ value: 1 });

/** A lease is a set-if-absent of its token, so every backend takes and reads leases the same way. */
abstract class Leases implements StateStore {
  abstract get<T>(key: string): Promise<T | undefined>;
  abstract set<T>(key: string, value: T, ttlMs?: number): Promise<void>;
  abstract delete(key: string): Promise<void>;
  abstract setIfAbsent<T>(key: string, value: T, ttlMs: number): Promise<boolean>;
  abstract replaceIf(key: string, expected: string, value: string, ttlMs: number): Promise<boolean>;
  abstract extendLock(lease: Lease, ttlMs: number): Promise<boolean>;
  abstract releaseLock(lease: Lease): Promise<void>;
  abstract setIfHolding<T>(lease: Lease, key: string, value: T): Promise<boolean>;
  abstract kvSetIfHolding<T>(lease: Lease, key: string, value: T): Promise<boolean>;
  abstract deleteIfHolding(lease: Lease, key: string): Promise<boolean>;
  abstract listAdd(list: string, member: string): Promise<void>;
  abstract listAddEach(lists: readonly string[], member: string): Promise<void>;
  abstract listRemove(list: string, member: string): Promise<void>;
  abstract listRemoveIfHolding(lease: Lease, list: string, member: string): Promise<boolean>;
  abstract listMembers(list: string): Promise<string[]>;

  async acquireLock(key: string, ttlMs: number, owner?: string): Promise<Lease | undefined> {
    const lease = newLease(key, owner);
    return (await this.setIfAbsent(lease.key, lease.token, ttlMs)) ? lease : undefined;
  }

  async lockHolder(key: string): Promise<Lease | undefined> {
    const token = await this.get<string>(lockKey(key));
    return token === undefined ? undefined : { key: lockKey(key), token };
  }

  async holds(lease: Lease): Promise<boolean> {
    return (await this.get<string>(lease.key)) === lease.token;
  }
}

/** JSON strings under `{namespace}:{key}`, with Redis's own expiry and atomic commands. */
class RedisState extends Leases {
  constructor(
    private readonly store: Store,
    private readonly redis: RedisClient,
  ) {
    super();
  }

  private raw(key: string): string {
    return `${this.store.namespace}:${key}`;
  }

  async get<T>(key: string): Promise<T | undefined> {
    const text = await this.redis.get(this.raw(key));
    return text === null ? undefined : (JSON.parse(text) as T);
  }

  async set<T>(key: string, value: T, ttlMs?: number): Promise<void> {
    const text = JSON.stringify(value);
    if (ttlMs) await this.redis.set(this.raw(key), text, { expiration: { type: "PX", value: ttlMs } });
    else await this.redis.set(this.raw(key), text);
  }

  async delete(key: string): Promise<void> {
    await this.redis.del(this.raw(key));
  }

  async setIfAbsent<T>(key: string, value: T, ttlMs: number): Promise<boolean> {
    const ok = await this.redis.set(this.raw(key), JSON.stringify(value), {
      condition: "NX",
      expiration: { type: "PX", value: ttlMs },
    });
    return ok === "OK";
  }

  async replaceIf(key: string, expected: string, value: string, ttlMs: number): Promise<boolean> {
    const wrote = await this.redis.eval(lua.REPLACE_IF, {
      keys: [this.raw(key)],
      arguments: [JSON.stringify(expected), JSON.stringify(value), String(ttlMs)],
    });
    return wrote === 1;
  }

  async extendLock(lease: Lease, ttlMs: number): Promise<boolean> {
    const kept = await this.redis.eval(lua.EXTEND, {
      keys: [this.raw(lease.key)],
      arguments: [JSON.stringify(lease.token), String(ttlMs)],
    });
    return kept === 1;
  }

  async releaseLock(lease: Lease): Promise<void> {
    await this.redis.eval(lua.RELEASE, {
      keys: [this.raw(lease.key)],
      arguments: [JSON.stringify(lease.token)],
    });
  }

  async setIfHolding<T>(lease: Lease, key: string, value: T): Promise<boolean> {
    const wrote = await this.redis.eval(lua.SET_IF_HOLDING, {
      keys: [this.raw(lease.key), this.raw(key)],
      arguments: [JSON.stringify(lease.token), JSON.stringify(value)],
    });
    return wrote === 1;
  }

  /** Keyv's envelope under @keyv/redis's own key, which the adapter prefixes with `ns::` (see openRedis). */
  async kvSetIfHolding<T>(lease: Lease, key: string, value: T): Promise<boolean> {
    const wrote = await this.redis.eval(lua.SET_IF_HOLDING, {
      keys: [this.raw(lease.key), `${this.store.namespace}::${key}`],
      arguments: [JSON.stringify(lease.token), JSON.stringify({ value })],
    });
    return wrote === 1;
  }

  async deleteIfHolding(lease: Lease, key: string): Promise<boolean> {
    const deleted = await this.redis.eval(lua.DELETE_IF_HOLDING, {
      keys: [this.raw(lease.key), this.raw(key)],
      arguments: [JSON.stringify(lease.token)],
    });
    return deleted === 1;
  }

  async listAdd(list: string, member: string): Promise<void> {
    await this.redis.sAdd(this.raw(list), member);
  }

  async listAddEach(lists: readonly string[], member: string, ttlMs?: number): Promise<void> {
    const batch = this.redis.multi();
    for (const list of lists) {
      batch.sAdd(this.raw(list), member);
      if (ttlMs) batch.pExpire(this.raw(list), ttlMs);
    }
    await batch.exec();
  }

  async listRemove(list: string, member: string): Promise<void> {
    await this.redis.sRem(this.raw(list), member);
  }

  async listRemoveIfHolding(lease: Lease, list: string, member: string): Promise<boolean> {
    const removed = await this.redis.eval(lua.SREM_IF_HOLDING, {
      keys: [this.raw(lease.key), this.raw(list)],
      arguments: [JSON.stringify(lease.token), member],
    });
    return removed === 1;
  }

  async listMembers(list: string): Promise<string[]> {
    return this.redis.sMembers(this.raw(list));
  }
}

/**
 * SQLite and PostgreSQL: keyv's own table and row format (`ns:key`,
 * `{"value":…,"expires":…}`), so keyv reads these rows as its own. Every conditional write
 * is one statement, which both engines run atomically, across processes too.
 */
class SqlState extends Leases {
  private readonly pg: boolean;

  constructor(
    private readonly store: Store,
    private readonly sql: SqlAccess,
  ) {
    super();
    this.pg = store.kind === "postgres";
  }

  private raw(key: string): string {
    return `${this.store.namespace}:${key}`;
  }

  /** Placeholders: `$1…` on PostgreSQL, `?` on SQLite. */
  private q(text: string): string {
    let n = 0;
    return this.pg ? text.replace(/\?/g, () => `$${++n}`) : text;
  }

  private field(path: "expires" | "value"): string {
    const t = this.sql.table;
    return this.pg ? `(${t}.value::jsonb->>'${path}')` : `json_extract(${t}.value, '$.${path}')`;
  }

  private expiresNum(): string {
    return this.pg ? `${this.field("expires")}::bigint` : this.field("expires");
  }

  async get<T>(key: string): Promise<T | undefined> {
    return (await this.store.kv.get<T>(key)) ?? undefined;
  }

  async set<T>(key: string, value: T, ttlMs?: number): Promise<void> {
    await this.store.kv.set(key, value, ttlMs);
  }

  async delete(key: string): Promise<void> {
    await this.store.kv.delete(key);
  }

  async setIfAbsent<T>(key: string, value: T, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const row = JSON.stringify({ value, expires: now + ttlMs });
    const t = this.sql.table;
    const rows = await this.sql.query(
      this.q(`INSERT INTO ${t} (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value
         WHERE ${this.expiresNum()} < ? RETURNING key`),
      [this.raw(key), row, now],
    );
    return rows.length > 0;
  }

  async replaceIf(key: string, expected: string, value: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const rows = await this.sql.query(
      this.q(
        `UPDATE ${this.sql.table} SET value = ? WHERE key = ? AND ${this.field("value")} = ? AND (${this.field("expires")} IS NULL OR ${this.expiresNum()} >= ?) RETURNING key`,
      ),
      [JSON.stringify({ value, expires: now + ttlMs }), this.raw(key), expected, now],
    );
    return rows.length > 0;
  }

  async extendLock(lease: Lease, ttlMs: number): Promise<boolean> {
    const row = JSON.stringify({ value: lease.token, expires: Date.now() + ttlMs });
    const rows = await this.sql.query(
      this.q(
        `UPDATE ${this.sql.table} SET value = ? WHERE key = ? AND ${this.field("value")} = ? RETURNING key`,
      ),
      [row, this.raw(lease.key), lease.token],
    );
    return rows.length > 0;
  }

  async releaseLock(lease: Lease): Promise<void> {
    await this.sql.query(
      this.q(`DELETE FROM ${this.sql.table} WHERE key = ? AND ${this.field("value")} = ?`),
      [this.raw(lease.key), lease.token],
    );
  }

  /** The lease's row is there, names its token and has not expired: `l` is its alias in a subquery. */
  private held(): string {
    const token = this.pg ? "(l.value::jsonb->>'value')" : "json_extract(l.value, '$.value')";
    const expires = this.pg ? "(l.value::jsonb->>'expires')::bigint" : "json_extract(l.value, '$.expires')";
    return `EXISTS (SELECT 1 FROM ${this.sql.table} AS l WHERE l.key = ? AND ${token} = ? AND ${expires} >= ?)`;
  }

  async setIfHolding<T>(lease: Lease, key: string, value: T): Promise<boolean> {
    const t = this.sql.table;
    // keyv's row format, without expiry; the WHERE also settles SQLite's upsert-after-SELECT ambiguity.
    const rows = await this.sql.query(
      this.q(`INSERT INTO ${t} (key, value) SELECT ?, ? WHERE ${this.held()}
         ON CONFLICT (key) DO UPDATE SET value = excluded.value RETURNING key`),
      [this.raw(key), JSON.stringify({ value }), this.raw(lease.key), lease.token, Date.now()],
    );
    return rows.length > 0;
  }

  /** On SQL every value is already keyv's row. */
  kvSetIfHolding<T>(lease: Lease, key: string, value: T): Promise<boolean> {
    return this.setIfHolding(lease, key, value);
  }

  async deleteIfHolding(lease: Lease, key: string): Promise<boolean> {
    const rows = await this.sql.query(
      this.q(`DELETE FROM ${this.sql.table} WHERE key = ? AND ${this.held()} RETURNING key`),
      [this.raw(key), this.raw(lease.key), lease.token, Date.now()],
    );
    return rows.length > 0;
  }

  /** One row per member (`list:{name}:{member}`): adding and removing never rewrite the others. */
  private member(list: string, member: string): string {
    return `list:${list}:${member}`;
  }

  async listAdd(list: string, member: string): Promise<void> {
    await this.listAddEach([list], member);
  }

  async listAddEach(lists: readonly string[], member: string, ttlMs?: number): Promise<void> {
    // PostgreSQL refuses an upsert that meets the same row twice.
    const each = [...new Set(lists)];
    if (each.length === 0) return;
    // keyv's row format (what kv.set(key, 1, ttl) writes): one statement for all.
    const row = ttlMs ? JSON.stringify({ value: 1, expires: Date.now() + ttlMs }) : LIST_ROW;
    const rows = each.map(() => "(?, ?)").join(", ");
    const params = each.flatMap((list) => [this.raw(this.member(list, member)), row]);
    await this.sql.query(
      this.q(`INSERT INTO ${this.sql.table} (key, value) VALUES ${rows}
         ON CONFLICT (key) DO UPDATE SET value = excluded.value`),
      params,
    );
  }

  async listRemove(list: string, member: string): Promise<void> {
    await this.store.kv.delete(this.member(list, member));
  }

  /** A member is a row: fenced as any row is. */
  listRemoveIfHolding(lease: Lease, list: string, member: string): Promise<boolean> {
    return this.deleteIfHolding(lease, this.member(list, member));
  }

  async listMembers(list: string): Promise<string[]> {
    const prefix = this.raw(this.member(list, ""));
    // SQLite: a range of the key's index, not a read of every row on the main thread. The
    // prefix ends in ":", so every key under it sorts below the prefix ending in ";".
    const rows = await this.sql.query(
      this.pg
        ? `SELECT key FROM ${this.sql.table} WHERE left(key, $1) = $2`
        : `SELECT key FROM ${this.sql.table} WHERE key >= ? AND key < ? AND substr(key, 1, ?) = ?`,
      this.pg ? [prefix.length, prefix] : [prefix, `${prefix.slice(0, -1)};`, prefix.length, prefix],
    );
    return rows.map((r) => String(r.key).slice(prefix.length));
  }
}
