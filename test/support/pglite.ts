import { type AddressInfo, createServer } from "node:net";
import { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketHandler, type PGLiteSocketHandlerOptions } from "@electric-sql/pglite-socket";

interface Queued {
  handlerId: number;
  message: Uint8Array;
  onData: (data: Uint8Array) => void;
  resolve: (bytes: number) => void;
  reject: (err: unknown) => void;
}

const SYNC = 0x53; // 'S'
const QUERY = 0x51; // 'Q'
const TERMINATE = 0x58; // 'X'
const PROTOCOL_3 = 0x00030000;

/** After this message the client waits for ReadyForQuery (or is gone): its exchange is over. */
function endsExchange(message: Uint8Array): boolean {
  const type = message[0];
  if (type === SYNC || type === QUERY || type === TERMINATE) return true;
  // The startup message has no type byte: length, then the protocol version.
  const view = new DataView(message.buffer, message.byteOffset, message.byteLength);
  return message.byteLength >= 8 && view.getInt32(4) === PROTOCOL_3;
}

/**
 * PGlite is one backend session. This queue lends it to one connection at a time, from the
 * connection's first message until its exchange ends (Sync, a simple Query, startup) with
 * no transaction open. pglite-socket's own queue (0.2.17) switches connections between any
 * two messages: a client whose Parse and Bind arrive in two reads then binds another
 * client's unnamed statement ("bind message supplies 0 parameters, but prepared statement
 * requires 1", reproduced with a raw client pausing between them). pg sends a query in one
 * write, so this is rare, but the session rows of the store tests are large enough to split.
 */
class SessionQueue {
  private readonly waiting: Queued[] = [];
  private owner: number | undefined;
  private draining = false;

  constructor(private readonly db: PGlite) {}

  enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ handlerId, message, onData, resolve, reject });
      void this.drain();
    });
  }

  clearQueueForHandler(handlerId: number): void {
    for (let i = this.waiting.length - 1; i >= 0; i--) {
      const q = this.waiting[i];
      if (q?.handlerId !== handlerId) continue;
      this.waiting.splice(i, 1);
      q.reject(new Error("Handler disconnected"));
    }
  }

  /** Called when a connection goes: its open transaction is rolled back and the session is free. */
  async clearTransactionIfNeeded(handlerId: number): Promise<void> {
    if (this.owner !== handlerId) return;
    if (this.db.isInTransaction()) await this.db.exec("ROLLBACK");
    this.owner = undefined;
    await this.drain();
  }

  getQueueLength(): number {
    return this.waiting.length;
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      for (;;) {
        const i = this.owner === undefined ? 0 : this.waiting.findIndex((q) => q.handlerId === this.owner);
        const next = i >= 0 ? this.waiting.splice(i, 1)[0] : undefined;
        if (!next) return;
        this.owner = next.handlerId;
        let bytes = 0;
        try {
          await this.db.runExclusive(() =>
            this.db.execProtocolRawStream(next.message, {
              onRawData: (data) => {
                bytes += data.length;
                next.onData(data);
              },
            }),
          );
        } catch (err) {
          this.owner = undefined;
          next.reject(err);
          continue;
        }
        if (endsExchange(next.message) && !this.db.isInTransaction()) this.owner = undefined;
        next.resolve(bytes);
      }
    } finally {
      this.draining = false;
    }
  }
}

export interface PgliteServer {
  /** postgres://postgres@127.0.0.1:<free port>/test; PGlite ignores the user and database names. */
  url: string;
  /** Closes every client's connection from the server's side, as a restart of PostgreSQL does; new ones are taken. */
  dropConnections(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * An in-memory PGlite behind the Postgres wire protocol on 127.0.0.1. pglite-socket's
 * handler speaks the protocol on each connection; the SessionQueue above decides whose turn it is.
 */
export async function startPgliteServer(): Promise<PgliteServer> {
  const db = await PGlite.create();
  const queue = new SessionQueue(db) as unknown as PGLiteSocketHandlerOptions["queryQueue"];
  const handlers = new Set<PGLiteSocketHandler>();
  const server = createServer((socket) => {
    const handler = new PGLiteSocketHandler({ queryQueue: queue, closeOnDetach: true });
    handlers.add(handler);
    const forget = () => handlers.delete(handler);
    handler.addEventListener("close", forget);
    handler.addEventListener("error", forget);
    handler.attach(socket).catch(() => socket.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/test`,
    async dropConnections() {
      for (const handler of [...handlers]) await handler.detach(true);
      handlers.clear();
    },
    async stop() {
      for (const handler of handlers) await handler.detach(true);
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await db.close();
    },
  };
}
