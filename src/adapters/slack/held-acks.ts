import type { App, ReceiverEvent } from "@slack/bolt";
import { log } from "../../log.js";

/**
 * The longest a message's acknowledgement is held: Slack redelivers what it has no
 * acknowledgement of after 3 s, and Bolt's HTTP receiver complains just after that. A
 * message still not stored by then (a slow store) is acknowledged anyway: its redelivery
 * would reach a process that cannot take it from this live one.
 */
export const ACK_HOLD_MS = 2_500;

/** Events that carry a message the bot may answer: their acknowledgement waits for it to be stored. */
const HELD_EVENTS = new Set(["message", "app_mention"]);

function heldEventId(body: ReceiverEvent["body"]): string | undefined {
  const b = body as { type?: unknown; event_id?: unknown; event?: { type?: unknown } };
  if (b.type !== "event_callback" || typeof b.event_id !== "string") return undefined;
  return typeof b.event?.type === "string" && HELD_EVENTS.has(b.event.type) ? b.event_id : undefined;
}

/**
 * Bolt acknowledges every event before its listeners run, so a process killed between that
 * and storing the message lost it: Slack had its acknowledgement and delivered it no more.
 * Here a message event's acknowledgement goes once the message is stored (`release`), once
 * its listeners are done with it (ignored, a copy, answered), or after `ACK_HOLD_MS`;
 * until then a crash leaves Slack to deliver it again, to this app's other connections.
 */
export class HeldAcks {
  private readonly held = new Map<string, Set<() => void>>();

  constructor(private readonly holdMs = ACK_HOLD_MS) {}

  /** Wraps the app's event processing, through which both of Bolt's receivers hand it every envelope. */
  install(app: App): void {
    const processEvent = app.processEvent.bind(app);
    app.processEvent = async (event: ReceiverEvent) => {
      const id = heldEventId(event.body);
      if (!id) return processEvent(event);
      const send = this.hold(id, event);
      try {
        await processEvent({ ...event, ack: async () => undefined });
      } finally {
        send();
      }
    };
  }

  /** The message of event `id` is stored (or will not be answered): Slack may have its acknowledgement. */
  release(id: string): void {
    const sends = this.held.get(id);
    if (!sends) return;
    this.held.delete(id);
    for (const send of sends) send();
  }

  private hold(id: string, event: ReceiverEvent): () => void {
    let sent = false;
    const send = () => {
      if (sent) return;
      sent = true;
      clearTimeout(timer);
      const sends = this.held.get(id);
      sends?.delete(send);
      if (sends?.size === 0) this.held.delete(id);
      event.ack().catch((err: unknown) => log.debug({ err, event: id }, "slack event not acknowledged"));
    };
    const timer = setTimeout(send, this.holdMs);
    timer.unref();
    // A redelivery of an event still held here is a second envelope, acknowledged with the first.
    const sends = this.held.get(id) ?? new Set();
    sends.add(send);
    this.held.set(id, sends);
    return send;
  }
}
