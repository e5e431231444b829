import { createRequire } from "node:module";
import { Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
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
  /** pg's own option: the socket each connection is made on (a new net.Socket by default). */
  stream: () => Socket;
}

const { Pool } = createRequire(import.meta.url)("pg") as { Pool: new (options: PoolOptions) => Pool };

interface PooledOptions {
  pool: Pool;
  /** Every socket of the pool's connections not closed yet, whatever it is doing. */
  sockets: ReadonlySet<Socket>;
  /** Aborted when the store gives up on the queries still unanswered (see `endPool`). */
  givenUp: AbortController;
  closeWithinMs: number;
}

/**
 * @keyv/postgres on a pool of the store's own. Its own pool is one per process, hidden in
 * the module, and has no 'error' listener: pg-pool emits an idle connection's error on the
 * pool (PostgreSQL restarted, or ended idle backends), and unheard, that error ended the
 * process, every replica at once. The pool has already dropped that connection and opens
 * another at the next query.
 */
class PooledKeyvPostgres extends KeyvPostgres {
  private closing: Promise<void> | undefined;

  /** Called by KeyvPostgres's constructor, before this class's fields exist: the pool comes in its options. */
  override async connect(): Promise<
    (sql: string, values?: unknown[]) => Promise<Array<Record<string, unknown>>>
  > {
    const { pool, givenUp } = this.opts as PooledOptions;
    return async (sql, values) => (await unlessGivenUp(() => pool.query(sql, values), givenUp.signal)).rows;
  }

  override disconnect(): Promise<void> {
    this.closing ??= endPool(this.opts as PooledOptions);
    return this.closing;
  }
}

/** What `query` answers, or the reason `signal` gives as soon as it aborts. */
async function unlessGivenUp<T>(query: () => Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  let giveUp: (() => void) | undefined;
  const abandoned = new Promise<never>((_, reject) => {
    giveUp = () => reject(signal.reason);
    signal.addEventListener("abort", giveUp, { once: true });
  });
  try {
    return await Promise.race([query(), abandoned]);
  } finally {
    if (giveUp) signal.removeEventListener("abort", giveUp);
  }
}

/**
 * The pool's end waits for every query to give its connection back and for every
 * connection being opened. On a connection gone half open (a partition: nothing crosses
 * it, nothing resets it) a query never answers nor fails, and whatever awaits it (an
 * adapter's close, a drain's last write) would wait until TCP gives up, many minutes
 * later; a query waiting for a connection waits out the connect timeout. So what is still
 * unanswered `closeWithinMs` after the close began fails at once, and every socket is
 * destroyed, which pg reads as the connection ended.
 */
async function endPool({ pool, sockets, givenUp, closeWithinMs }: PooledOptions): Promise<void> {
  const ended = pool.end();
  if (await Promise.race([ended.then(() => true), sleep(closeWithinMs, false, { ref: false })])) return;
  log.warn("PostgreSQL did not answer as the store closed: the queries it still held fail");
  givenUp.abort(new Error("the store closed before PostgreSQL answered"));
  for (const socket of sockets) socket.destroy();
}

export function keyvPostgres(options: {
  url: string;
  table: string;
  keySize: number;
  connectTimeoutMs: number;
  /** How long closing waits for the queries in flight before it fails them. */
  closeWithinMs: number;
}): KeyvPostgres {
  const sockets = new Set<Socket>();
  const pool = new Pool({
    connectionString: options.url,
    connectionTimeoutMillis: options.connectTimeoutMs,
    stream: () => {
      const socket = new Socket();
      sockets.add(socket);
      socket.once("close", () => sockets.delete(socket));
      return socket;
    },
  });
  pool.on("error", (err) =>
    // The error carries its client (and its connection parameters): only what happened is logged.
    log.warn(
      { err: err.message, code: err.code },
      "PostgreSQL closed a connection of the store; the next query opens another",
    ),
  );
  const pooled: PooledOptions = {
    pool,
    sockets,
    givenUp: new AbortController(),
    closeWithinMs: options.closeWithinMs,
  };
  return new PooledKeyvPostgres({
    uri: options.url,
    table: options.table,
    keySize: options.keySize,
    ...pooled,
  });
}
