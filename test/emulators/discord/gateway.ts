import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";

/** Gateway opcodes (https://discord.com/developers/docs/topics/opcodes-and-status-codes). */
const Op = {
  Dispatch: 0,
  Heartbeat: 1,
  Identify: 2,
  Resume: 6,
  Reconnect: 7,
  InvalidSession: 9,
  Hello: 10,
  HeartbeatAck: 11,
} as const;

interface Frame {
  op: number;
  d: unknown;
  s: number | null;
  t: string | null;
}

interface Session {
  /** [shard id, shard count] from IDENTIFY ([0, 1] when not given). */
  shard: [number, number];
  id: string;
  intents: number;
  seq: number;
  /** Every dispatch of this session, for RESUME replay. */
  sent: Frame[];
  socket: WebSocket | null;
  /** On the next RESUME, also replay this many events the bot already acknowledged. */
  rewind: number;
  /** Ms each of its dispatch events takes to reach it (see `Gateway.lag`). */
  lagMs: number;
}

export interface IdentifyInfo {
  intents: number;
  /** Privileged intents the app may not use: identifying with any of them closes with 4014. */
  disallowedIntents?: number;
  /** Builds READY's `d` plus the GUILD_CREATE payloads for a new session. */
  ready(sessionId: string): { ready: Record<string, unknown>; guilds: Record<string, unknown>[] };
}

export interface GatewayStats {
  identifies: number;
  resumes: number;
  heartbeats: number;
  /** Dispatches replayed on RESUME. */
  replayed: number;
}

/**
 * The gateway half of the emulator: HELLO, IDENTIFY -> READY + GUILD_CREATE, heartbeats,
 * RESUME with replay of what the session missed. Sessions outlive their sockets, as on
 * Discord, so a dropped connection resumes without losing events.
 */
export class Gateway {
  readonly stats: GatewayStats = { identifies: 0, resumes: 0, heartbeats: 0, replayed: 0 };
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly sessions = new Map<string, Session>();
  private readonly sockets = new Set<WebSocket>();
  /** Dispatches made while `holding` is set wait here until the connection is back. */
  private holding = false;

  constructor(
    private readonly identify: (token: string) => IdentifyInfo | null,
    private readonly heartbeatInterval: number,
    /** Shapes a dispatch for one session by its intents (e.g. message content withheld). */
    private readonly shape: (t: string, d: unknown, intents: number) => unknown = (_t, d) => d,
  ) {}

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws));
  }

  /** Number of sessions with a live, identified socket. */
  connected(): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.socket) n++;
    return n;
  }

  /**
   * Sends a dispatch event to every session of the shard it belongs to (two sessions of one
   * shard both receive it, as during deploys). As on Discord, a guild's events go to shard
   * (guild_id >> 22) % count, everything else (direct messages) to shard 0.
   */
  dispatch(t: string, d: unknown, intent?: number): void {
    const guild = (d as { guild_id?: unknown } | null)?.guild_id;
    for (const session of this.sessions.values()) {
      if (intent !== undefined && (session.intents & intent) === 0) continue;
      const [id, count] = session.shard;
      const target = typeof guild === "string" ? Number((BigInt(guild) >> 22n) % BigInt(count)) : 0;
      if (target !== id) continue;
      session.seq += 1;
      const frame: Frame = { op: Op.Dispatch, t, s: session.seq, d: this.shape(t, d, session.intents) };
      session.sent.push(frame);
      const socket = session.socket;
      if (!socket || this.holding) continue;
      if (session.lagMs > 0) setTimeout(() => this.send(socket, frame), session.lagMs);
      else socket.send(JSON.stringify(frame));
    }
  }

  /**
   * The `nth` session identified (from 0) receives each dispatch event `ms` later than
   * it is sent: a replica further away, which sees every message after the others did.
   */
  lag(nth: number, ms: number): void {
    const session = [...this.sessions.values()][nth];
    if (!session) throw new Error(`No gateway session ${nth}: ${this.sessions.size} identified`);
    session.lagMs = ms;
  }

  /**
   * Closes every socket with 4000 (unknown error), which discord.js answers with RESUME.
   * While `hold` is true the sessions accept no socket, so events pile up for the replay.
   */
  drop(opts: { replayDelivered?: number } = {}): void {
    for (const session of this.sessions.values()) {
      // Rewinding the acknowledged point makes the next RESUME replay events the bot already saw.
      if (opts.replayDelivered) session.rewind = opts.replayDelivered;
      session.socket?.close(4000, "Emulator dropped the connection");
      session.socket = null;
    }
  }

  /** The next RESUME of each session also replays the last `count` events its bot had already acknowledged. */
  rewind(count: number): void {
    for (const session of this.sessions.values()) session.rewind = count;
  }

  hold(on: boolean): void {
    this.holding = on;
    if (!on) {
      for (const ws of this.sockets) ws.close(4000, "Emulator released the hold");
    }
  }

  close(): void {
    for (const ws of this.sockets) ws.terminate();
    this.wss.close();
  }

  private accept(ws: WebSocket): void {
    this.sockets.add(ws);
    ws.on("close", (code) => {
      this.sockets.delete(ws);
      for (const [id, s] of this.sessions) {
        if (s.socket !== ws) continue;
        s.socket = null;
        // A normal close from the client ends the session, as on Discord; other codes keep it resumable.
        if (code === 1000 || code === 1001) this.sessions.delete(id);
      }
    });
    ws.on("message", (raw) => this.onFrame(ws, String(raw)));
    this.send(ws, { op: Op.Hello, d: { heartbeat_interval: this.heartbeatInterval }, s: null, t: null });
  }

  private onFrame(ws: WebSocket, raw: string): void {
    let frame: { op: number; d: unknown };
    try {
      frame = JSON.parse(raw) as { op: number; d: unknown };
    } catch {
      ws.close(4002, "Decode error");
      return;
    }
    switch (frame.op) {
      case Op.Heartbeat:
        this.stats.heartbeats++;
        this.send(ws, { op: Op.HeartbeatAck, d: null, s: null, t: null });
        return;
      case Op.Identify:
        this.onIdentify(ws, frame.d as { token: string; intents: number });
        return;
      case Op.Resume:
        this.onResume(ws, frame.d as { token: string; session_id: string; seq: number | null });
        return;
      default:
        return;
    }
  }

  private onIdentify(ws: WebSocket, d: { token: string; intents: number; shard?: [number, number] }): void {
    if (this.holding) return;
    const info = this.identify(d.token);
    if (!info) {
      ws.close(4004, "Authentication failed");
      return;
    }
    if ((d.intents & (info.disallowedIntents ?? 0)) !== 0) {
      ws.close(4014, "Disallowed intent(s).");
      return;
    }
    const shard = d.shard ?? [0, 1];
    const [shardId, shardCount] = shard;
    if (
      !Number.isInteger(shardId) ||
      !Number.isInteger(shardCount) ||
      shardCount < 1 ||
      shardId < 0 ||
      shardId >= shardCount
    ) {
      ws.close(4010, "Invalid shard.");
      return;
    }
    this.stats.identifies++;
    const session: Session = {
      shard: [shardId, shardCount],
      id: randomUUID().replace(/-/g, ""),
      intents: d.intents,
      seq: 0,
      sent: [],
      socket: ws,
      rewind: 0,
      lagMs: 0,
    };
    this.sessions.set(session.id, session);
    const { ready, guilds } = info.ready(session.id);
    const mine = guilds.filter((g) => Number((BigInt(String(g.id)) >> 22n) % BigInt(shardCount)) === shardId);
    this.sendDispatch(session, "READY", {
      ...(ready as object),
      shard: session.shard,
      guilds: mine.map((g) => ({ id: g.id, unavailable: true })),
    });
    for (const g of mine) this.sendDispatch(session, "GUILD_CREATE", g);
  }

  private onResume(ws: WebSocket, d: { token: string; session_id: string; seq: number | null }): void {
    if (this.holding) return;
    const session = this.sessions.get(d.session_id);
    if (!session || !this.identify(d.token)) {
      this.send(ws, { op: Op.InvalidSession, d: false, s: null, t: null });
      return;
    }
    this.stats.resumes++;
    session.socket?.close(4009, "Session taken over");
    session.socket = ws;
    const from = Math.max(0, (d.seq ?? 0) - session.rewind);
    session.rewind = 0;
    for (const frame of session.sent) {
      if (frame.s !== null && frame.s > from) {
        this.stats.replayed++;
        this.send(ws, frame);
      }
    }
    this.sendDispatch(session, "RESUMED", {});
  }

  private sendDispatch(session: Session, t: string, d: unknown): void {
    session.seq += 1;
    const frame: Frame = { op: Op.Dispatch, t, s: session.seq, d };
    session.sent.push(frame);
    if (session.socket) this.send(session.socket, frame);
  }

  private send(ws: WebSocket, frame: Frame): void {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(frame));
  }
}
