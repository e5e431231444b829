import { createHmac, randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import type { Params } from "./http-util.js";

export type EnvelopeType = "events_api" | "slash_commands" | "interactive";

export interface Envelope {
  envelope_id: string;
  type: EnvelopeType;
  payload: Params;
  accepts_response_payload: boolean;
  retry_attempt: number;
  retry_reason: string;
}

/** One event handed to the app, with every attempt Slack made to deliver it. */
export interface Delivery {
  type: EnvelopeType;
  payload: Params;
  /** Envelope ids of every attempt, first one first. */
  envelopeIds: string[];
  acked: boolean;
  /** What the app sent with its ack (slash command responses). */
  ackPayload?: unknown;
  /**
   * Why Slack gave up on a slash command or interaction (`operation_timeout`: no ack
   * within the deadline). The user was shown an error; a later ack changes nothing.
   */
  failed?: string;
  /** Acks (Socket Mode frames or HTTP responses) that arrived after the deadline, ignored. */
  lateAcks: { at: number; payload: unknown }[];
  /** Resolves with the ack payload, or with undefined once Slack gives up. */
  done: Promise<unknown>;
}

export interface DeliveryOptions {
  /**
   * Slack waits 3 s for an ack. An event is then retried; a slash command or an
   * interaction is not: the user sees an error and a later ack is ignored.
   */
  ackTimeoutMs: number;
  /** Slack retries an event delivery up to 3 times. */
  maxRetries: number;
}

/**
 * Slash commands and interactions are not redelivered: without an ack within 3 s the user
 * sees "/cmd failed with the error "operation_timeout"" and Slack drops the request.
 */
const NOT_RETRIED: ReadonlySet<EnvelopeType> = new Set(["slash_commands", "interactive"]);

interface Pending {
  delivery: Delivery;
  attempt: number;
  timer?: NodeJS.Timeout;
  settle: (payload: unknown) => void;
}

/** HTTP mode: where Slack POSTs events, and the secret it signs them with. */
export interface HttpTarget {
  url: string;
  signingSecret: string;
}

/**
 * Hands envelopes to the app over Socket Mode (hello, envelopes, acks, disconnect) or,
 * with an `HttpTarget`, as signed HTTP requests. Un-acked envelopes are redelivered with
 * `retry_attempt` / `retry_reason` like Slack does.
 */
export class Deliverer {
  readonly wss = new WebSocketServer({ noServer: true });
  readonly sockets = new Set<WebSocket>();
  /** Every frame the emulator sent over Socket Mode, for tests. */
  readonly sent: Params[] = [];
  readonly deliveries: Delivery[] = [];
  httpTarget?: HttpTarget;
  connections = 0;
  private readonly byEnvelope = new Map<string, Pending>();
  private queue: Envelope[] = [];
  private nextSocket = 0;
  private closed = false;

  constructor(public options: DeliveryOptions) {
    this.wss.on("connection", (ws) => this.onConnection(ws));
  }

  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.wss.handleUpgrade(req, socket, head, (ws) => this.wss.emit("connection", ws, req));
  }

  private onConnection(ws: WebSocket): void {
    this.connections += 1;
    this.sockets.add(ws);
    ws.on("close", () => this.sockets.delete(ws));
    ws.on("message", (data) => this.onFrame(data.toString()));
    this.sendFrame(ws, {
      type: "hello",
      num_connections: this.sockets.size,
      debug_info: { host: "emulator", approximate_connection_time: 3600 },
      connection_info: { app_id: "A1" },
    });
    const queued = this.queue;
    this.queue = [];
    for (const envelope of queued) this.send(envelope);
  }

  private onFrame(text: string): void {
    let frame: Params;
    try {
      frame = JSON.parse(text) as Params;
    } catch {
      return;
    }
    const id = typeof frame.envelope_id === "string" ? frame.envelope_id : undefined;
    const pending = id ? this.byEnvelope.get(id) : undefined;
    if (pending) this.acknowledge(pending, frame.payload);
  }

  private acknowledge(pending: Pending, payload: unknown): void {
    if (pending.delivery.failed) {
      pending.delivery.lateAcks.push({ at: Date.now(), payload });
      return;
    }
    if (pending.delivery.acked) return;
    clearTimeout(pending.timer);
    pending.delivery.acked = true;
    pending.delivery.ackPayload = payload;
    pending.settle(payload);
  }

  private sendFrame(ws: WebSocket, frame: Params): void {
    this.sent.push(frame);
    ws.send(JSON.stringify(frame));
  }

  /** Hands one event to the app; `times` > 1 sends the very same event that many times. */
  deliver(type: EnvelopeType, payload: Params, times = 1): Delivery[] {
    const out: Delivery[] = [];
    for (let i = 0; i < times; i++) out.push(this.start(type, payload, i, i > 0 ? "timeout" : ""));
    return out;
  }

  private start(type: EnvelopeType, payload: Params, attempt: number, reason: string): Delivery {
    let settle: (payload: unknown) => void = () => {};
    const done = new Promise<unknown>((resolve) => {
      settle = resolve;
    });
    const delivery: Delivery = { type, payload, envelopeIds: [], acked: false, lateAcks: [], done };
    this.deliveries.push(delivery);
    this.attempt({ delivery, attempt, settle }, reason);
    return delivery;
  }

  private attempt(pending: Pending, reason: string): void {
    if (this.closed) {
      pending.settle(undefined);
      return;
    }
    const envelope: Envelope = {
      envelope_id: randomUUID(),
      type: pending.delivery.type,
      payload: pending.delivery.payload,
      accepts_response_payload: pending.delivery.type !== "events_api",
      retry_attempt: pending.attempt,
      retry_reason: reason,
    };
    pending.delivery.envelopeIds.push(envelope.envelope_id);
    this.byEnvelope.set(envelope.envelope_id, pending);
    pending.timer = setTimeout(() => {
      if (pending.delivery.acked) return;
      if (NOT_RETRIED.has(pending.delivery.type)) {
        pending.delivery.failed = "operation_timeout";
        return pending.settle(undefined);
      }
      if (pending.attempt >= this.options.maxRetries) return pending.settle(undefined);
      pending.attempt += 1;
      this.attempt(pending, "timeout");
    }, this.options.ackTimeoutMs);
    if (this.httpTarget) void this.post(this.httpTarget, envelope, pending);
    else this.send(envelope);
  }

  private send(envelope: Envelope): void {
    const open = [...this.sockets].filter((ws) => ws.readyState === ws.OPEN);
    if (open.length === 0) {
      this.queue.push(envelope);
      return;
    }
    this.nextSocket = (this.nextSocket + 1) % open.length;
    const ws = open[this.nextSocket];
    if (ws) this.sendFrame(ws, envelope as unknown as Params);
  }

  /** Asks every connected client to reconnect, as Slack does before recycling a host. */
  disconnect(reason: "warning" | "refresh_requested" | "link_disabled" = "refresh_requested"): void {
    for (const ws of this.sockets) {
      this.sendFrame(ws, { type: "disconnect", reason, debug_info: { host: "emulator" } });
    }
  }

  private async post(target: HttpTarget, envelope: Envelope, pending: Pending): Promise<void> {
    const { body, contentType } = httpBody(envelope);
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = `v0=${createHmac("sha256", target.signingSecret).update(`v0:${timestamp}:${body}`).digest("hex")}`;
    const headers: Record<string, string> = {
      "content-type": contentType,
      "x-slack-request-timestamp": timestamp,
      "x-slack-signature": signature,
    };
    if (envelope.retry_attempt > 0) {
      headers["x-slack-retry-num"] = String(envelope.retry_attempt);
      headers["x-slack-retry-reason"] = envelope.retry_reason || "http_timeout";
    }
    try {
      const res = await fetch(target.url, { method: "POST", headers, body });
      const text = await res.text();
      if (res.status !== 200) return;
      let payload: unknown = text === "" ? undefined : text;
      try {
        payload = text ? JSON.parse(text) : undefined;
      } catch {
        // A plain-text response is a valid slash command answer.
      }
      this.acknowledge(pending, payload);
    } catch {
      // The timer redelivers, as Slack would after a connection failure.
    }
  }

  /** Closes every socket with a close handshake (clients see a clean close, not an error). */
  async close(): Promise<void> {
    this.closed = true;
    for (const pending of this.byEnvelope.values()) {
      clearTimeout(pending.timer);
      pending.settle(pending.delivery.ackPayload);
    }
    await Promise.all(
      [...this.sockets].map(
        (ws) =>
          new Promise<void>((resolve) => {
            const force = setTimeout(() => {
              ws.terminate();
              resolve();
            }, 500);
            ws.once("close", () => {
              clearTimeout(force);
              resolve();
            });
            ws.close(1001, "emulator stopping");
          }),
      ),
    );
    this.wss.close();
  }
}

function httpBody(envelope: Envelope): { body: string; contentType: string } {
  if (envelope.type === "events_api") {
    return { body: JSON.stringify(envelope.payload), contentType: "application/json" };
  }
  if (envelope.type === "interactive") {
    const form = new URLSearchParams({ payload: JSON.stringify(envelope.payload) });
    return { body: form.toString(), contentType: "application/x-www-form-urlencoded" };
  }
  const form = new URLSearchParams();
  for (const [k, v] of Object.entries(envelope.payload)) form.set(k, String(v));
  return { body: form.toString(), contentType: "application/x-www-form-urlencoded" };
}
