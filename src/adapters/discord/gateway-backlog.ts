import WebSocket from "ws";

/** A gateway session as it can be resumed (what discord.js keeps of one: its SessionInfo). */
export interface StoredSession {
  sessionId: string;
  resumeURL: string;
  /** The last event that needs no replay: RESUME asks for everything after it. */
  sequence: number;
  shardId: number;
  shardCount: number;
}

/** A MESSAGE_CREATE dispatch as it came over the gateway. */
export interface MessagePacket {
  op: 0;
  t: "MESSAGE_CREATE";
  s: number;
  d: { id: string; channel_id: string } & Record<string, unknown>;
}

export interface Backlog {
  /**
   * Discord replayed everything up to RESUMED. False when it no longer knows the session
   * (INVALID_SESSION), or the socket closed or stayed silent first: then `messages` is what
   * came before, and anything after it is out of reach.
   */
  complete: boolean;
  messages: MessagePacket[];
  /** The last sequence replayed (the stored one when nothing was). */
  last: number;
}

const GATEWAY_VERSION = "10";
const Op = { Dispatch: 0, Heartbeat: 1, Reconnect: 7, InvalidSession: 9, Hello: 10 } as const;
/** Any close but 1000 and 1001 keeps a session resumable on Discord: a reader killed before its messages were stored leaves it to the next one. */
const KEEP_RESUMABLE = 4000;

/**
 * Resumes a stopped process's gateway session and reads what Discord replays of it: the
 * events it sent after `session.sequence`, which that process may have received and never
 * stored. discord.js's own shard re-identifies when a resume is refused, and the client's
 * one session is its live one, so this is a socket of its own that only ever resumes,
 * reads the replay, and closes.
 */
export function readBacklog(session: StoredSession, token: string, timeoutMs = 15_000): Promise<Backlog> {
  const url = new URL(session.resumeURL);
  url.searchParams.set("v", GATEWAY_VERSION);
  url.searchParams.set("encoding", "json");
  const messages: MessagePacket[] = [];
  let last = session.sequence;
  return new Promise((resolve) => {
    const socket = new WebSocket(url);
    let beat: NodeJS.Timeout | undefined;
    const finish = (complete: boolean) => {
      clearTimeout(timer);
      clearInterval(beat);
      socket.removeAllListeners();
      socket.on("error", () => {});
      if (socket.readyState === WebSocket.OPEN) socket.close(KEEP_RESUMABLE, "Backlog read");
      else socket.terminate();
      resolve({ complete, messages, last });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    const send = (payload: unknown) => socket.send(JSON.stringify(payload));
    socket.on("error", () => finish(false));
    socket.on("close", () => finish(false));
    socket.on("message", (raw) => {
      let frame: { op: number; t?: string | null; s?: number | null; d?: unknown };
      try {
        frame = JSON.parse(String(raw)) as typeof frame;
      } catch {
        return;
      }
      if (typeof frame.s === "number") last = Math.max(last, frame.s);
      switch (frame.op) {
        case Op.Hello: {
          const every = (frame.d as { heartbeat_interval?: number } | null)?.heartbeat_interval ?? 41_250;
          beat = setInterval(() => send({ op: Op.Heartbeat, d: last }), every);
          send({ op: 6, d: { token, session_id: session.sessionId, seq: session.sequence } });
          return;
        }
        case Op.Heartbeat:
          send({ op: Op.Heartbeat, d: last });
          return;
        case Op.InvalidSession:
        case Op.Reconnect:
          finish(false);
          return;
        case Op.Dispatch:
          if (frame.t === "RESUMED") finish(true);
          else if (frame.t === "MESSAGE_CREATE" && isMessage(frame)) messages.push(frame);
          return;
        default:
          return;
      }
    });
  });
}

function isMessage(frame: { s?: number | null; d?: unknown }): frame is MessagePacket {
  const d = frame.d as { id?: unknown; channel_id?: unknown } | null;
  return typeof frame.s === "number" && typeof d?.id === "string" && typeof d.channel_id === "string";
}
