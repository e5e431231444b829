import { createRequire } from "node:module";
import KeyvPostgres from "@keyv/postgres";
import { log } from "../log.js";

/** The part of pg's pool the store uses (pg ships no types, and @types/pg is not a dependency). */
interface Pool {
  query(sql: string, params?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
  on(event: "error", listener: (err: Error & { code?: string }) => void): unknown;
  end(): Promise<void>;
}

interface PoolOptions {
  connectionString: string;
  connectionTimeoutMillis: number;
}

const { Pool } = createRequire(import.meta.url)("pg") as { Pool: new (options: PoolOptions) => Pool };

/**
 * @keyv/postgres on a pool of the store's own. Its own pool is one per process, hidden in
 * the module, and has no 'error' listener: pg-pool emits an idle connection's error on the
 * pool (PostgreSQL restarted, or ended idle backends), and unheard, that error ended the
 * process, every replica at once. The pool has already dropped that connection and opens
 * another at the next query.
 */
class PooledKeyvPostgres extends KeyvPostgres {
  private ended = false;

  /** Called by KeyvPostgres's constructor, before this class's fields exist: the pool comes in its options. */
  override async connect(): Promise<
    (sql: string, values?: unknown[]) => Promise<Array<Record<string, unknown>>>
  > {
    const { pool } = this.opts as { pool: Pool };
    return async (sql, values) => (await pool.query(sql, values)).rows;
  }

  override async disconnect(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    await (this.opts as { pool: Pool }).pool.end();
  }
}

export function keyvPostgres(options: {
  url: string;
  table: string;
  keySize: number;
  connectTimeoutMs: number;
}): KeyvPostgres {
  const pool = new Pool({ connectionString: options.url, connectionTimeoutMillis: options.connectTimeoutMs });
  pool.on("error", (err) =>
    // The error carries its client (and its connection parameters): only what happened is logged.
    log.warn(
      { err: err.message, code: err.code },
      "PostgreSQL closed a connection of the store; the next query opens another",
    ),
  );
  return new PooledKeyvPostgres({
    uri: options.url,
    table: options.table,
    keySize: options.keySize,
    pool,
  });
}
