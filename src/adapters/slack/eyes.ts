import type { WebClient } from "@slack/web-api";
import { log } from "../../log.js";
import type { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";

/** How long a closing adapter waits for the :eyes: removals still under way (its drain is over by then). */
export const EYES_CLOSE_MS = 1_000;

/**
 * The :eyes: the bot puts on a message it takes (`Inbound.mark`: `channel:ts`) and takes
 * away once the message is answered, here or by a process that answered it after the one
 * that took it stopped.
 */
export class Eyes {
  private readonly removing = new Set<Promise<void>>();
  private readonly closing = new AbortController();

  constructor(private readonly deps: { writes: WebClient; scheduler: WriteScheduler }) {}

  async add(channel: string, ts: string): Promise<void> {
    await this.deps.writes.reactions.add({ channel, timestamp: ts, name: "eyes" });
  }

  /**
   * `reactions.remove` is Tier 2 (20/min), spent when the :eyes: was added (an :eyes: is
   * shown only while it can be taken away again), so it goes at once; a 429 (removals
   * bunched by answers of different lengths) is waited out: removing is idempotent. Answers
   * that end in a stop's drain take theirs away too, until the adapter closes.
   */
  remove(mark: string): Promise<void> {
    const at = mark.indexOf(":");
    const [channel, ts] = [mark.slice(0, at), mark.slice(at + 1)];
    const removal = this.deps.scheduler
      .as("update", () => this.deps.writes.reactions.remove({ channel, timestamp: ts, name: "eyes" }), {
        signal: this.closing.signal,
      })
      .then(
        () => undefined,
        (err: unknown) => log.debug({ err, channel, ts }, "acknowledgement not cleared"),
      )
      .finally(() => this.removing.delete(removal));
    this.removing.add(removal);
    return removal;
  }

  /** Waits for the removals under way, `ms` at most: a leftover :eyes: is not worth holding up a shutdown. */
  async close(ms = EYES_CLOSE_MS): Promise<void> {
    const timer = new Promise<void>((r) => setTimeout(r, ms).unref());
    await Promise.race([Promise.allSettled([...this.removing]), timer]);
    this.closing.abort();
  }
}
