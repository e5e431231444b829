/*
 * Messages this process has taken, by channel and ts, for a while. Slack delivers a
 * mention in a channel twice (as `app_mention` and as `message`), and redelivers what it
 * thinks was not acknowledged. The store's dedupe decides, between replicas and across
 * restarts, which copy is answered; a copy this process already took is dropped here, at
 * once, instead of first writing the thread as the asker's last and reading it back behind
 * every other message's steps: in a crowd of two hundred mentions, half the messages on
 * their way to the dispatcher were such copies.
 */

/** How long a message's copies are recognized here (Slack's redeliveries come within minutes). */
const KEEP_MS = 10 * 60_000;
/** At most this many messages remembered; the oldest go first. */
const MAX = 20_000;

export class MessageCopies {
  /** Message id -> when it was taken, oldest first (a Map keeps insertion order). */
  private readonly taken = new Map<string, number>();

  constructor(
    private readonly keepMs = KEEP_MS,
    private readonly max = MAX,
  ) {}

  /** True the first time `id` is offered (within the window); false for each copy after it. */
  first(id: string, now = Date.now()): boolean {
    const at = this.taken.get(id);
    if (at !== undefined && at + this.keepMs > now) return false;
    this.taken.delete(id);
    // Room for one more: what is past the window goes, then the oldest beyond the cap.
    for (const [old, when] of this.taken) {
      if (when + this.keepMs > now && this.taken.size < this.max) break;
      this.taken.delete(old);
    }
    this.taken.set(id, now);
    return true;
  }
}
