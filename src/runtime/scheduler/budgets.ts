/** At most `capacity` writes in any window of `windowMs`. */
export interface BucketLimit {
  capacity: number;
  windowMs: number;
}

/** What a platform tells the scheduler about its budgets. */
export interface WritePolicy {
  /**
   * The limit of a bucket, or undefined while none is known. `learned` turns true once a
   * 429 showed that the bucket is limited: a platform whose limits depend on the
   * workspace (Slack) starts optimistic and returns its documented limit only then.
   */
  limitOf(bucket: string, learned: boolean): BucketLimit | undefined;
}

/**
 * The state of a connection's budgets: what each bucket spent in its window, and which
 * are paused. The scheduler asks it synchronously at every pick, so it must answer from
 * memory. For replicas sharing a workspace or bot (the replicas issue) a shared book keeps
 * this interface: it leases a share of each bucket's window from the store ahead of need
 * and publishes pauses, so the hot path stays local and no write waits on a round trip.
 */
export interface BudgetBook {
  /** ms until a write may spend from `bucket`, keeping `reserve` of its capacity free (0: now). */
  wait(bucket: string, reserve: number, now: number): number;
  /** A write was granted on these buckets. */
  spend(buckets: readonly string[], now: number): void;
  /** Nobody spends from `bucket` for `ms`; its limit is known from now on. */
  pause(bucket: string, ms: number, now: number): void;
  /**
   * A 429 on `narrow`, a part of `wide`: true when enough of `wide`'s parts met one
   * lately that `wide` itself is spent (Slack's workspace-wide tiers).
   */
  limitedWithin(wide: string, narrow: string, now: number): boolean;
}

/** A wider bucket counts as spent when this many of its narrower buckets met a 429 within this long. */
const ESCALATE_AFTER = 2;
const ESCALATE_WINDOW_MS = 60_000;

interface Bucket {
  /** When the writes inside the current window were granted, oldest first. */
  sent: number[];
  pausedUntil: number;
  learned: boolean;
  /** Narrower buckets that met a 429, and when (for escalation). */
  limitedBelow: Map<string, number>;
}

/** One process's budgets: sliding windows kept in memory. */
export class LocalBudgets implements BudgetBook {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly policy: WritePolicy) {}

  private bucket(key: string): Bucket {
    let b = this.buckets.get(key);
    if (!b) {
      b = { sent: [], pausedUntil: 0, learned: false, limitedBelow: new Map() };
      this.buckets.set(key, b);
    }
    return b;
  }

  wait(key: string, reserve: number, now: number): number {
    const b = this.buckets.get(key);
    const limit = this.policy.limitOf(key, b?.learned ?? false);
    const usable = limit ? limit.capacity - Math.floor(limit.capacity * reserve) : Number.POSITIVE_INFINITY;
    if (usable < 1) return Number.POSITIVE_INFINITY;
    if (!b) return 0;
    const paused = Math.max(0, b.pausedUntil - now);
    if (!limit) return paused;
    while (b.sent.length > 0 && (b.sent[0] ?? 0) + limit.windowMs <= now) b.sent.shift();
    if (b.sent.length < usable) return paused;
    // The write that must leave the window before there is room again.
    const leaving = b.sent[b.sent.length - usable] ?? now;
    return Math.max(paused, leaving + limit.windowMs - now);
  }

  spend(buckets: readonly string[], now: number): void {
    for (const key of buckets) this.bucket(key).sent.push(now);
  }

  pause(key: string, ms: number, now: number): void {
    const b = this.bucket(key);
    b.pausedUntil = Math.max(b.pausedUntil, now + ms);
    b.learned = true;
  }

  limitedWithin(wide: string, narrow: string, now: number): boolean {
    const b = this.bucket(wide);
    b.limitedBelow.set(narrow, now);
    for (const [k, at] of b.limitedBelow) if (at + ESCALATE_WINDOW_MS <= now) b.limitedBelow.delete(k);
    return b.limitedBelow.size >= ESCALATE_AFTER;
  }
}
