import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { setImmediate as nextTurn } from "node:timers/promises";
import KeyvRedis from "@keyv/redis";
import { createClient } from "@redis/client";
import Keyv, { type DeserializedData } from "keyv";
import { SwitchboardError } from "../core/errors.js";
import { notAUrl, parsesAsWritten, urlCredentials, withoutPassword } from "../core/url-credentials.js";
import { log } from "../log.js";
import { keyvPostgres } from "./postgres-pool.js";
import { SqliteConnection, SqliteKeyvAdapter } from "./sqlite.js";
import { CHECKPOINTS_START_AFTER_MS, Checkpoints } from "./sqlite-checkpoints.js";

export type StoreKind = "sqlite" | "redis" | "postgres";
export type RedisClient = ReturnType<typeof newRedisClient>;

/** The SQL table behind sqlite and postgres, so that `query` users know where keyv keeps its rows. */
export interface SqlAccess {
  table: string;
  query(sql: string, params: unknown[]): Promise<Array<Record<string, unknown>>>;
}

export interface Store {
  kv: Keyv;
  kind: StoreKind;
  /** Prefix of every key this store writes (keyv namespace; raw Redis keys use it too). */
  namespace: string;
  /** The connected client when kind is "redis": locks and dedupe use it for atomic commands. */
  redis?: RedisClient;
  /** Raw SQL on the keyv table when kind is "sqlite" or "postgres". */
  sql?: SqlAccess;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export interface OpenStoreOptions {
  namespace?: string;
  /** How often expired rows are deleted on sqlite/postgres (their adapters have no native TTL). */
  sweepEveryMs?: number;
}

export const DEFAULT_STORE_URL = "sqlite://data/switchboard.sqlite";
const TABLE = "switchboard";
const CONNECT_TIMEOUT_MS = 5_000;
/**
 * How long closing a server's store waits for the calls still in flight before it fails
 * them. One that stopped answering (a partition, a failover) never answers them: the Redis
 * client queues them while it reconnects, and a half-open socket waits for their replies
 * (Redis's and PostgreSQL's alike). A stopping process exits at most 5 s after its grace.
 */
const CLOSE_WITHIN_MS = 1_000;

/** The URL as it may appear in logs and errors: any password replaced. */
export const redactUrl = withoutPassword;

/**
 * Keyv's default serializer walks values by hand and turns strings starting with
 * ":base64:" into Buffers; plain JSON round-trips every value a session holds, exactly.
 */
const serialize = <V>(data: DeserializedData<V>): string => JSON.stringify(data);
const deserialize = <V>(data: string): DeserializedData<V> | undefined => JSON.parse(data);

/** What the person in the chat is told when the store fails while their message is handled. */
export const STORE_DOWN_SENTENCE =
  "My storage is not reachable right now, so I cannot answer. Please try again in a moment.";

/** A store call that failed during a turn, as an error whose sentence says so. */
export function storeFailed(cause: unknown): SwitchboardError {
  if (cause instanceof SwitchboardError) return cause;
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new SwitchboardError("store_unavailable", `The store failed: ${reason}`, {
    cause,
    userMessage: STORE_DOWN_SENTENCE,
  });
}

function unavailable(url: string, cause: unknown): SwitchboardError {
  let reason = cause instanceof Error ? cause.message : String(cause);
  for (const password of urlCredentials(url)) reason = reason.split(password).join("***");
  const hint = url.startsWith("sqlite:")
    ? "Check STORE_URL and that its folder is writable."
    : "Check STORE_URL and that the server is running.";
  return new SwitchboardError(
    "store_unavailable",
    `The store at ${redactUrl(url)} cannot be reached (${reason}). ${hint}`,
    {
      cause,
      userMessage: STORE_DOWN_SENTENCE,
    },
  );
}

/**
 * Readiness must answer even when the store does not: the Redis client queues commands
 * while it reconnects and a pool waits for a free connection.
 */
async function answersWithin(check: () => Promise<unknown>, ms = 2_000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((r) => {
    timer = setTimeout(() => r(false), ms);
  });
  try {
    return await Promise.race([
      check().then(
        () => true,
        () => false,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function makeKeyv(
  store: ConstructorParameters<typeof Keyv>[0],
  namespace: string,
  useKeyPrefix = true,
): Keyv {
  const kv = new Keyv(store, { namespace, serialize, deserialize, throwOnErrors: true, useKeyPrefix });
  // Errors are thrown to the caller as well (throwOnErrors); the event only needs a listener.
  kv.on("error", (err: unknown) => log.debug({ err }, "store error event"));
  return kv;
}

export async function openStore(
  url: string = DEFAULT_STORE_URL,
  options: OpenStoreOptions = {},
): Promise<Store> {
  const namespace = options.namespace ?? "switchboard";
  let scheme: string;
  try {
    scheme = new URL(url).protocol.replace(/:$/, "");
  } catch {
    throw new SwitchboardError("config_invalid", notAUrl("STORE_URL", url));
  }
  // A server's URL misread (its user name taken for the host, its password's start for the
  // port) would be dialled as read: refused before anything connects, or quotes it.
  if (scheme !== "sqlite" && !parsesAsWritten(url))
    throw new SwitchboardError("config_invalid", notAUrl("STORE_URL", url));
  const store =
    scheme === "sqlite"
      ? await openSqlite(url, namespace)
      : scheme === "redis" || scheme === "rediss"
        ? await openRedis(url, namespace)
        : scheme === "postgres" || scheme === "postgresql"
          ? await openPostgres(url, namespace)
          : undefined;
  if (!store) {
    throw new SwitchboardError(
      "config_invalid",
      `STORE_URL scheme "${scheme}" is not supported; use sqlite://, redis:// or postgres://.`,
    );
  }
  if (store.sql) startSweeper(store, options.sweepEveryMs ?? 3_600_000);
  log.debug({ kind: store.kind, url: redactUrl(url), namespace }, "store open");
  return store;
}

/** Deletes rows whose keyv expiry has passed; otherwise they stay until someone reads them. */
export async function sweepExpired(store: Store): Promise<number> {
  if (!store.sql) return 0;
  const prefix = `${store.namespace}:`;
  if (store.kind === "postgres") {
    const rows = await store.sql.query(
      `DELETE FROM ${TABLE} WHERE left(key, $1) = $2 AND (value::jsonb->>'expires')::bigint < $3 RETURNING key`,
      [prefix.length, prefix, Date.now()],
    );
    return rows.length;
  }
  // SQLite answers on the main thread: the table is swept a slice of rows at a time, the
  // event loop free between slices, since reading each row's expiry parses its whole value.
  const [last] = await store.sql.query(`SELECT max(rowid) AS top FROM ${TABLE}`, []);
  const top = Number(last?.top ?? 0);
  let deleted = 0;
  for (let from = 0; from < top; from += SWEEP_SLICE) {
    const rows = await store.sql.query(
      `DELETE FROM ${TABLE} WHERE rowid > ? AND rowid <= ? AND substr(key, 1, ?) = ?
         AND json_extract(value, '$.expires') < ? RETURNING key`,
      [from, from + SWEEP_SLICE, prefix.length, prefix, Date.now()],
    );
    deleted += rows.length;
    await nextTurn();
  }
  return deleted;
}

/** Rows of SQLite's table read per step of a sweep (a session's value can be tens of kilobytes). */
export const SWEEP_SLICE = 500;

function startSweeper(store: Store, everyMs: number): void {
  const sweep = () =>
    sweepExpired(store).then(
      (n) => n > 0 && log.debug({ deleted: n }, "expired store rows deleted"),
      (err: unknown) => log.warn({ err }, "sweeping expired store rows failed"),
    );
  const timer = setInterval(sweep, everyMs);
  timer.unref();
  const close = store.close;
  store.close = async () => {
    clearInterval(timer);
    await close();
  };
}

type SqlQuery = (sql: string, params: unknown[]) => Promise<Array<Record<string, unknown>>>;

/** How long a write waits for another process's (the `chat` CLI beside the bot) before SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 5_000;
/** Longest key, as the table declares it (keyv keys are namespaced thread keys). */
const KEY_SIZE = 1024;

/** How long replicas opening one new file together keep trying (see connectSqlite). */
const SQLITE_SETUP_TRIES_MS = 5_000;

/**
 * A connection with the table made and the file in WAL mode. Two connections setting up
 * the same new file at once can meet where SQLite refuses one without waiting (its rule
 * against deadlock: one holds a read lock while the other waits to write), so the refused
 * one starts over with a new connection after a short random pause.
 */
async function connectSqlite(
  url: string,
  file: string,
): Promise<{ adapter: SqliteKeyvAdapter; connection: SqliteConnection }> {
  const giveUpAt = Date.now() + SQLITE_SETUP_TRIES_MS;
  for (;;) {
    let connection: SqliteConnection | undefined;
    try {
      connection = new SqliteConnection({
        file,
        table: TABLE,
        keySize: KEY_SIZE,
        busyTimeoutMs: BUSY_TIMEOUT_MS,
      });
      // WAL keeps readers off the writer's back and makes each small save one append.
      connection.pragma("journal_mode = WAL");
      connection.pragma("synchronous = NORMAL");
      return { adapter: new SqliteKeyvAdapter(connection), connection };
    } catch (err) {
      connection?.close();
      if ((err as { code?: string }).code !== "SQLITE_BUSY" || Date.now() > giveUpAt)
        throw unavailable(url, err);
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 80));
    }
  }
}

async function openSqlite(url: string, namespace: string): Promise<Store> {
  const path = url.replace(/^sqlite:\/\//, "");
  const inMemory = path === ":memory:" || path === "";
  const file = inMemory ? ":memory:" : resolve(path);
  try {
    if (!inMemory) mkdirSync(dirname(file), { recursive: true });
  } catch (err) {
    throw unavailable(url, err);
  }
  const { adapter, connection } = await connectSqlite(url, file);
  const query: SqlQuery = (sql, params) => connection.run(sql, params);
  // A file's checkpoints run in a worker, the connection that answers queries making none;
  // started a little after the store opens, so that a command that opens it for a moment
  // (doctor, a slash command's CLI) starts no thread.
  let checkpoints: Checkpoints | undefined;
  const starting = inMemory
    ? undefined
    : setTimeout(() => {
        checkpoints = new Checkpoints(file, BUSY_TIMEOUT_MS, () => {
          // The worker may stop as the store closes: a closed connection has nothing to checkpoint.
          if (connection.isOpen) connection.pragma("wal_autocheckpoint = 1000");
        });
        connection.pragma("wal_autocheckpoint = 0");
      }, CHECKPOINTS_START_AFTER_MS);
  starting?.unref();
  return {
    kv: makeKeyv(adapter, namespace),
    kind: "sqlite",
    namespace,
    sql: { table: TABLE, query },
    ping: () => answersWithin(() => query("SELECT 1 AS ok", [])),
    close: async () => {
      clearTimeout(starting);
      await checkpoints?.stop();
      await adapter.disconnect();
    },
  };
}

async function openPostgres(url: string, namespace: string): Promise<Store> {
  const adapter = keyvPostgres({
    url,
    table: TABLE,
    keySize: KEY_SIZE,
    connectTimeoutMs: CONNECT_TIMEOUT_MS,
    closeWithinMs: CLOSE_WITHIN_MS,
  });
  let setupError: unknown;
  adapter.on("error", (err: unknown) => {
    setupError = err;
  });
  const query = async (sql: string, params: unknown[]) => {
    const rows = (await adapter.query(sql, params)) as Array<Record<string, unknown>> | undefined;
    // The adapter tells of a failed setup (its CREATE TABLE) only by this event.
    if (setupError) throw setupError;
    return rows ?? [];
  };
  try {
    await query("SELECT 1 AS ok", []);
  } catch (err) {
    await adapter.disconnect().catch(() => {});
    throw unavailable(url, setupError ?? err);
  }
  return {
    kv: makeKeyv(adapter, namespace),
    kind: "postgres",
    namespace,
    sql: { table: TABLE, query },
    ping: () => answersWithin(() => query("SELECT 1 AS ok", [])),
    close: () => adapter.disconnect(),
  };
}

function newRedisClient(url: string, isConnected: () => boolean) {
  return createClient({
    url,
    socket: {
      connectTimeout: CONNECT_TIMEOUT_MS,
      // Fail fast on the first connect (a wrong STORE_URL), reconnect with back-off afterwards.
      reconnectStrategy: (retries: number) => (isConnected() ? Math.min(100 * 2 ** retries, 2_000) : false),
    },
  });
}

async function openRedis(url: string, namespace: string): Promise<Store> {
  let connected = false;
  const client = newRedisClient(url, () => connected);
  client.on("error", (err: unknown) => {
    if (connected)
      log.warn({ err: err instanceof Error ? err.message : String(err) }, "redis connection error");
  });
  try {
    await client.connect();
    connected = true;
  } catch (err) {
    if (client.isOpen) client.destroy();
    throw unavailable(url, err);
  }
  const adapter = new KeyvRedis(client as never, { throwOnErrors: true });
  return {
    // The adapter prefixes keys with the namespace itself (`ns::key`); Keyv must not add its own.
    kv: makeKeyv(adapter, namespace, false),
    kind: "redis",
    namespace,
    redis: client,
    ping: () =>
      answersWithin(async () => {
        if ((await client.ping()) !== "PONG") throw new Error("unexpected PING reply");
      }),
    close: async () => {
      if (!client.isOpen) return;
      // Replies come in order: the PING answered, so was every command sent before it. Then
      // destroy(): close() waits for the queue with no end, and what is left in it (a server
      // gone) fails now, as on a connection that broke.
      if (!(await answersWithin(() => client.ping(), CLOSE_WITHIN_MS)))
        log.warn("Redis did not answer as the store closed: the commands it still held fail");
      if (client.isOpen) client.destroy();
    },
  };
}
