import { EventEmitter } from "node:events";
import { setImmediate as nextTurn } from "node:timers/promises";
import Database, { type Statement } from "better-sqlite3";
import type { StoredData } from "keyv";

/*
 * Keyv's rows in SQLite through better-sqlite3, in the table and format @keyv/sqlite
 * writes (key, value TEXT), so a file written before reads the same. Why not
 * node-sqlite3 (@keyv/sqlite's driver): each of its queries is a trip to libuv's pool for
 * preparing, one for running and a finalize back on the main thread under the
 * connection's mutex, where the event loop stops while a pool thread holds it. Measured
 * with the bot's own statements: 74-80 µs of CPU per query there, 8.5 µs here (prepared
 * once and run on the main thread, where a key lookup is shorter than a pool hop). The
 * WAL's checkpoints, the one long step, run in a worker (sqlite-checkpoints.ts); a wait
 * for another process's write (the `chat` CLI beside the bot) stays here, each write a
 * few microseconds long.
 */

/**
 * Milliseconds of queries after which a query waits for the event loop to turn first: the
 * event-loop delay the app aims to stay under. Under load a turn of the loop lasts 100 ms
 * and more, holds many turns' queries (and the garbage collections that fall inside
 * them), and each wait for the next one is that long: at 1 ms, two hundred answers
 * starting at once waited that long at most of the dozen store calls between their
 * message and their model request (4,355 waits, 69 ms at the median; 20 ms: 826; 50 ms: 160).
 */
export const YIELD_AFTER_MS = 50;

/** Milliseconds spent in queries since the event loop last turned (reset by setImmediate). */
let spentThisTurn = 0;
let resetting = false;

function spend(ms: number): void {
  spentThisTurn += ms;
  if (resetting) return;
  resetting = true;
  setImmediate(() => {
    spentThisTurn = 0;
    resetting = false;
  });
}

/** Statements kept prepared per connection, at most. */
const MAX_STATEMENTS = 256;

/** One row as keyv's adapters read it. */
type Row = { key: string; value: string };

/** Values SQLite binds; booleans and undefined are bound as node-sqlite3 bound them. */
function bindable(x: unknown): unknown {
  if (x === undefined) return null;
  if (typeof x === "boolean") return x ? 1 : 0;
  return x;
}

export interface SqliteOptions {
  file: string;
  table: string;
  keySize: number;
  /** How long a write waits for another process's (the `chat` CLI, a replica) before SQLITE_BUSY. */
  busyTimeoutMs: number;
}

/** A connection with its statements prepared once each. */
export class SqliteConnection {
  private readonly db: Database.Database;
  private readonly statements = new Map<string, Statement>();

  constructor(readonly options: SqliteOptions) {
    this.db = new Database(options.file, { timeout: options.busyTimeoutMs });
  }

  /** Rows for a statement that returns them (SELECT, RETURNING), else none; as keyv's query answered. */
  query(sql: string, params: readonly unknown[] = []): Array<Record<string, unknown>> {
    const statement = this.prepared(sql);
    const values = params.map(bindable);
    if (statement.reader) return statement.all(...values) as Array<Record<string, unknown>>;
    statement.run(...values);
    return [];
  }

  /**
   * The query, after letting the event loop turn if this turn of it has already spent
   * YIELD_AFTER_MS in queries: a caller's long chain of store calls lets timers and
   * sockets in between, as a driver's trips to a thread pool did, while the lookups of
   * many turns at once run straight on.
   */
  async run(sql: string, params: readonly unknown[] = []): Promise<Array<Record<string, unknown>>> {
    if (spentThisTurn >= YIELD_AFTER_MS) await nextTurn();
    const started = performance.now();
    try {
      return this.query(sql, params);
    } finally {
      spend(performance.now() - started);
    }
  }

  get isOpen(): boolean {
    return this.db.open;
  }

  pragma(text: string): void {
    this.db.pragma(text);
  }

  close(): void {
    this.statements.clear();
    if (this.db.open) this.db.close();
  }

  private prepared(sql: string): Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      // The store's statements are a few dozen; SQL beyond the cap is prepared each time.
      if (this.statements.size < MAX_STATEMENTS) this.statements.set(sql, statement);
    }
    return statement;
  }
}

/** Keyv's store adapter on a SqliteConnection: the same statements as @keyv/sqlite's. */
export class SqliteKeyvAdapter extends EventEmitter {
  readonly opts: { dialect: "sqlite"; url: string; table: string };
  namespace?: string | undefined;
  private readonly t: string;

  constructor(private readonly connection: SqliteConnection) {
    super();
    this.t = connection.options.table;
    this.opts = { dialect: "sqlite", url: `sqlite://${connection.options.file}`, table: this.t };
    connection.query(
      `CREATE TABLE IF NOT EXISTS ${this.t}(key VARCHAR(${connection.options.keySize}) PRIMARY KEY, value TEXT )`,
    );
  }

  async get<Value>(key: string): Promise<StoredData<Value> | undefined> {
    const [row] = await this.rows(`SELECT * FROM ${this.t} WHERE key = ?`, [key]);
    return row?.value as StoredData<Value> | undefined;
  }

  async getMany<Value>(keys: string[]): Promise<Array<StoredData<Value | undefined>>> {
    const rows = await this.rows(`SELECT * FROM ${this.t} WHERE key IN (SELECT value FROM json_each(?))`, [
      JSON.stringify(keys),
    ]);
    const found = new Map(rows.map((r) => [r.key, r.value]));
    return keys.map((k) => found.get(k) as StoredData<Value | undefined>);
  }

  async set(key: string, value: string): Promise<void> {
    await this.connection.run(
      `INSERT INTO ${this.t} (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
      [key, value],
    );
  }

  async delete(key: string): Promise<boolean> {
    return (await this.rows(`DELETE FROM ${this.t} WHERE key = ? RETURNING key`, [key])).length > 0;
  }

  async deleteMany(keys: string[]): Promise<boolean> {
    const rows = await this.rows(
      `DELETE FROM ${this.t} WHERE key IN (SELECT value FROM json_each(?)) RETURNING key`,
      [JSON.stringify(keys)],
    );
    return rows.length > 0;
  }

  async has(key: string): Promise<boolean> {
    return (await this.rows(`SELECT key FROM ${this.t} WHERE key = ?`, [key])).length > 0;
  }

  async clear(): Promise<void> {
    await this.connection.run(`DELETE FROM ${this.t} WHERE key LIKE ?`, [
      this.namespace ? `${this.namespace}:%` : "%",
    ]);
  }

  async *iterator(namespace?: string): AsyncGenerator<[string, string], void> {
    const rows = await this.rows(`SELECT * FROM ${this.t} WHERE key LIKE ?`, [
      namespace ? `${namespace}:%` : "%",
    ]);
    for (const row of rows) yield [row.key, row.value];
  }

  async disconnect(): Promise<void> {
    this.connection.close();
  }

  private async rows(sql: string, params: unknown[]): Promise<Row[]> {
    return (await this.connection.run(sql, params)) as Row[];
  }
}
