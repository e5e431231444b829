import { type ClaimedWrite, type Claims, distinctKeys } from "./claims.js";
import type { SqlAccess, Store } from "./index.js";
import type { Lease } from "./lease-tokens.js";
import { Leases } from "./state-leases.js";

/** A list member's row on SQL, as keyv writes `set(key, 1)` without expiry. */
const LIST_ROW = JSON.stringify({ value: 1 });

/** A boolean column: PostgreSQL answers true/false, SQLite 1/0. */
const truthy = (x: unknown): boolean => x === true || x === 1;

/**
 * SQLite and PostgreSQL: keyv's own table and row format (`ns:key`,
 * `{"value":…,"expires":…}`), so keyv reads these rows as its own. Every conditional write
 * is one statement, which both engines run atomically, across processes too.
 */
export class SqlState extends Leases {
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

  /**
   * Not keyv's get: on a row it reads as expired, that deletes the key in a statement of
   * its own, which also takes what another process wrote in between (a replica's next
   * heartbeat, a lease or claim just taken). An expired row is left for the sweeper.
   */
  async get<T>(key: string): Promise<T | undefined> {
    const [row] = await this.sql.query(this.q(`SELECT value FROM ${this.sql.table} WHERE key = ?`), [
      this.raw(key),
    ]);
    if (row === undefined) return undefined;
    // keyv's own reading of its rows (a string it wrote beginning with ":" is escaped).
    const data = await this.store.kv.deserializeData<T>(String(row.value));
    if (data === undefined) return undefined;
    // Live while `expires >= now`, as the conditional writes here and the sweeper count it.
    if (typeof data.expires === "number" && data.expires < Date.now()) return undefined;
    return data.value ?? undefined;
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

  /** Whether this call deleted `key`'s row, in one statement with the check of the lease. */
  private async deleteHeld(lease: Lease, key: string): Promise<boolean> {
    const rows = await this.sql.query(
      this.q(`DELETE FROM ${this.sql.table} WHERE key = ? AND ${this.held()} RETURNING key`),
      [this.raw(key), this.raw(lease.key), lease.token, Date.now()],
    );
    return rows.length > 0;
  }

  /**
   * True, as Redis's script answers, also when the key is already gone: the holder is still
   * the holder (a turn's record ended twice must not read as a lost lock). A DELETE cannot
   * say that of a row it did not find, and SQLite has no DELETE inside a query, so the
   * lease and the key are read again together; a key written in between is deleted anew.
   */
  async deleteIfHolding(lease: Lease, key: string): Promise<boolean> {
    for (;;) {
      if (await this.deleteHeld(lease, key)) return true;
      const [row] = await this.sql.query(
        this.q(
          `SELECT ${this.held()} AS held, EXISTS (SELECT 1 FROM ${this.sql.table} WHERE key = ?) AS present`,
        ),
        [this.raw(lease.key), lease.token, Date.now(), this.raw(key)],
      );
      if (!truthy(row?.held)) return false;
      if (!truthy(row?.present)) return true;
    }
  }

  async setClaiming<T>(
    lease: Lease | undefined,
    key: string,
    value: T,
    claims: Claims,
  ): Promise<ClaimedWrite> {
    const t = this.sql.table;
    const now = Date.now();
    const keys = distinctKeys(claims);
    const claim = JSON.stringify({ value: claims.value, expires: now + claims.ttlMs });
    const rows = [[this.raw(key), JSON.stringify({ value })], ...keys.map((k) => [this.raw(k), claim])];
    const marks = (n: number) => Array.from({ length: n }, () => "?").join(", ");
    // One statement, as every conditional write here: the record's row and the claims'
    // rows, only while the lease is held and no live claim is another's.
    const taken = `EXISTS (SELECT 1 FROM ${t} WHERE key IN (${marks(keys.length)}) AND ${this.expiresNum()} >= ? AND ${this.field("value")} NOT IN (${marks(claims.mine.length)}))`;
    const written = await this.sql.query(
      this.q(`INSERT INTO ${t} (key, value) SELECT column1, column2 FROM (VALUES ${rows
        .map(() => "(?, ?)")
        .join(", ")}) AS v WHERE ${lease ? `${this.held()} AND ` : ""}NOT ${taken}
         ON CONFLICT (key) DO UPDATE SET value = excluded.value RETURNING key`),
      [
        ...rows.flat(),
        ...(lease ? [this.raw(lease.key), lease.token, now] : []),
        ...keys.map((k) => this.raw(k)),
        now,
        ...claims.mine,
      ],
    );
    if (written.length > 0) return "written";
    return lease && !(await this.holds(lease)) ? "lease" : "claim";
  }

  /** One row per member (`list:{name}:{member}`): adding and removing never rewrite the others. */
  private member(list: string, member: string): string {
    return `list:${list}:${member}`;
  }

  async listAdd(list: string, member: string): Promise<void> {
    await this.listAddEach([list], member);
  }

  /** The member's row is keyv's `{"value":1}`, as `listAdd` writes it. */
  listAddClaiming(list: string, member: string, claims: Claims): Promise<ClaimedWrite> {
    return this.setClaiming(undefined, this.member(list, member), 1, claims);
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

  /** A member is a row, fenced as any row is; true only when this call removed it, as SREM counts. */
  listRemoveIfHolding(lease: Lease, list: string, member: string): Promise<boolean> {
    return this.deleteHeld(lease, this.member(list, member));
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
