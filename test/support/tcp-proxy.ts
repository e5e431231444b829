import { type AddressInfo, createConnection, createServer, type Server, type Socket } from "node:net";

/**
 * How a cut looks to the client. "silent": a partition, packets dropped both ways; the
 * connections stay open and nothing crosses them (TCP would deliver it once the way is
 * back, and so does `restore`). "refuse": the server gone (a failover, a restart): open
 * connections are reset and each new one is closed as soon as it is taken.
 */
export type Cut = "silent" | "refuse";

interface Pair {
  client: Socket;
  server: Socket;
  /** Bytes held while the way is cut silently, each towards its side. */
  toServer: Buffer[];
  toClient: Buffer[];
}

/**
 * A TCP proxy on 127.0.0.1 in front of a server (Redis, PostgreSQL), between one process and
 * that server, which a test cuts: the process loses its store while everything else reaches it.
 */
export class TcpProxy {
  private readonly pairs = new Set<Pair>();
  private cut: Cut | undefined;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** A proxy for the server at `url`'s host and port. */
  static async start(url: string): Promise<TcpProxy> {
    const target = new URL(url);
    const host = target.hostname;
    const port = Number(target.port);
    let proxy!: TcpProxy;
    const server = createServer((client) => proxy.take(client, host, port));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", resolve);
    });
    proxy = new TcpProxy(server, (server.address() as AddressInfo).port);
    return proxy;
  }

  /** `url` with its host and port this proxy's, the rest (user, database, query) as it was. */
  urlFor(url: string): string {
    const u = new URL(url);
    u.hostname = "127.0.0.1";
    u.port = String(this.port);
    return u.toString();
  }

  cutOff(how: Cut): void {
    this.cut = how;
    if (how === "refuse") for (const pair of [...this.pairs]) this.drop(pair);
  }

  /** The way is back: what a silent cut held goes through, in order. */
  restore(): void {
    this.cut = undefined;
    for (const pair of this.pairs) {
      for (const chunk of pair.toServer.splice(0)) pair.server.write(chunk);
      for (const chunk of pair.toClient.splice(0)) pair.client.write(chunk);
    }
  }

  async close(): Promise<void> {
    for (const pair of [...this.pairs]) this.drop(pair);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private take(client: Socket, host: string, port: number): void {
    if (this.cut === "refuse") {
      client.resetAndDestroy();
      return;
    }
    const server = createConnection({ host, port });
    const pair: Pair = { client, server, toServer: [], toClient: [] };
    this.pairs.add(pair);
    client.on("data", (chunk: Buffer) => this.pass(pair, chunk, pair.server, pair.toServer));
    server.on("data", (chunk: Buffer) => this.pass(pair, chunk, pair.client, pair.toClient));
    for (const side of [client, server]) {
      side.on("error", () => this.drop(pair));
      side.on("close", () => this.drop(pair));
    }
  }

  private pass(pair: Pair, chunk: Buffer, to: Socket, held: Buffer[]): void {
    if (!this.pairs.has(pair)) return;
    if (this.cut === "silent") held.push(chunk);
    else to.write(chunk);
  }

  private drop(pair: Pair): void {
    if (!this.pairs.delete(pair)) return;
    pair.client.resetAndDestroy();
    pair.server.destroy();
  }
}
