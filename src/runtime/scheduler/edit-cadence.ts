/**
 * Intermediate edits that a connection's streaming replies make together each second, at
 * most: under a crowd each reply's edits are spread further apart (its first message and
 * its final text are not). Every edit costs the bot and the platform a request: two
 * hundred Slack threads each edited once a second made 6.2 writes a thread and 1.68x the
 * naive bot's CPU, against 4.4 and 1.50x at this rate, their final text sooner
 * (bench/RESULTS.md, seventeenth session).
 */
const EDITS_PER_SECOND = 50;
/** A reply that has not written for this long is no longer counted as streaming (it ended without saying). */
const STREAM_STALE_MS = 30_000;

/** How often the replies streaming on one platform connection edit their messages. */
export class EditCadence {
  /** Replies streaming, and when each last said so. */
  private readonly streams = new Map<object, number>();
  private prunedAt = 0;

  /** `reply` is streaming an answer: it counts in `editInterval` until `streamEnded` (or for STREAM_STALE_MS). */
  streaming(reply: object, now = Date.now()): void {
    this.streams.set(reply, now);
  }

  streamEnded(reply: object): void {
    this.streams.delete(reply);
  }

  /**
   * The interval between a streaming reply's intermediate edits: `base`, or longer when
   * the connection's replies together would edit more than EDITS_PER_SECOND times a second.
   */
  editInterval(base: number, now = Date.now()): number {
    if (now - this.prunedAt >= 1_000) {
      this.prunedAt = now;
      for (const [reply, at] of this.streams) if (at + STREAM_STALE_MS <= now) this.streams.delete(reply);
    }
    return Math.max(base, (this.streams.size * 1_000) / EDITS_PER_SECOND);
  }
}
