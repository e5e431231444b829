/** At most `capacity` writes in any window of `windowMs`. */
export interface BucketLimit {
  capacity: number;
  windowMs: number;
  /**
   * Only one kind of write ever spends from this bucket (Slack's reactions.remove, which
   * only takes the :eyes: away): nothing more urgent can need it, so none of it is kept back.
   */
  alone?: boolean;
}

/** What a platform tells the scheduler about its budgets. */
export interface WritePolicy {
  /**
   * The limit of a bucket, or undefined while none is known. `learned` turns true once a
   * 429 showed that the bucket is limited: a platform whose limits depend on the
   * workspace (Slack) starts optimistic and returns its documented limit only then.
   */
  limitOf(bucket: string, learned: boolean): BucketLimit | undefined;
  /**
   * A 429 that names no bucket is the write's narrowest bucket's (Discord's: its 429s say
   * when they are the bot's global limit). Otherwise such a 429 may be a wider bucket's
   * (Slack's, which do not tell a channel's limit from the workspace's tier), inferred
   * from 429s in several of its narrower buckets (see `limitedWithin`). Inferred for
   * Discord, any second channel's 429 within a minute paused the bot's global bucket,
   * every replica's writes in every thread with it.
   */
  unnamedIsNarrow?: boolean;
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
  /**
   * A write granted at `grantedAt` on these buckets was refused with a 429, which the
   * platform does not count: it leaves their windows. Kept there, each refused write held
   * a place for a whole window that the platform had left free, and its retry waited for
   * the places it had taken itself to age out.
   */
  refund(buckets: readonly string[], grantedAt: number): void;
  /** Nobody spends from `bucket` for `ms`; its limit is known from now on. */
  pause(bucket: string, ms: number, now: number): void;
  /**
   * A 429 on `narrow`, a part of `wide`: true when enough of `wide`'s parts met one
   * lately that `wide` itself is spent (Slack's workspace-wide tiers). A part that alone
   * sent as many writes as `wide` takes in its window met its own limit, and does not count.
   * Never under a policy whose unnamed 429s are the narrow bucket's (`unnamedIsNarrow`).
   */
  limitedWithin(wide: string, narrow: string, now: number): boolean;
}

/**
 * How far back the writes of a bucket without a known limit are kept: a limit learned
 * later (Slack's, at a bucket's first 429) counts them, and none is longer than Discord's
 * renames' ten minutes. Kept for ever, a busy bot's every chat.update was a number held to
 * the end of the process, and each of a shared book's syncs read them all again.
 */
export const UNKNOWN_LIMIT_HISTORY_MS = 600_000;

/**
 * A bucket unused this long, with nothing in its window and no pause, is forgotten. Many
 * buckets are named by something short-lived (a Discord interaction's token, which lives
 * 15 minutes; a thread), and kept for ever each was held in memory, read at every shared
 * sync and, once a 429 had taught it, published to the other replicas until the end of
 * the process. Longer than every window (Discord's renames' ten minutes), so that nothing
 * forgotten still counts; a limit learned there is learned again at its next 429.
 */
export const IDLE_BUCKET_MS = 15 * 60_000;
/** How often the buckets are looked through for idle ones: a sweep reads them all. */
const SWEEP_EVERY_MS = 60_000;

/** A wider bucket counts as spent when this many of its narrower buckets met a 429 within this long. */
const ESCALATE_AFTER = 2;
const ESCALATE_WINDOW_MS = 60_000;

/** What a bucket spent lately and whether it is paused: one process's, or the others' (see SharedBudgets). */
export interface BucketView {
  /** When the writes inside the current window were granted, oldest first. */
  sent: number[];
  pausedUntil: number;
  learned: boolean;
}

interface Bucket extends BucketView {
  /** Narrower buckets that met a 429, and when (for escalation). */
  limitedBelow: Map<string, number>;
  /** When a write last spent from it, paused it or met a 429 below it. */
  usedAt: number;
}

/** No writes, no pause, nothing learned: what a bucket no process used looks like. */
export const NOTHING: BucketView = { sent: [], pausedUntil: 0, learned: false };
export const NO_429S: ReadonlyMap<string, number> = new Map();

/** One process's budgets: sliding windows kept in memory. */
export class LocalBudgets implements BudgetBook {
  private readonly buckets = new Map<string, Bucket>();
  private sweptAt = Number.NEGATIVE_INFINITY;

  constructor(protected readonly policy: WritePolicy) {}

  /** What other processes spent from `bucket` and how they paused it (none here). */
  protected extra(_bucket: string): BucketView {
    return NOTHING;
  }

  /** Narrower buckets of `wide` that met a 429 in other processes, and when (none here). */
  protected extraBelow(_wide: string): ReadonlyMap<string, number> {
    return NO_429S;
  }

  /** The narrower buckets of each wide one that met a 429 here lately. */
  protected ownBelow(): Map<string, ReadonlyMap<string, number>> {
    const out = new Map<string, ReadonlyMap<string, number>>();
    for (const [key, b] of this.buckets) if (b.limitedBelow.size) out.set(key, b.limitedBelow);
    return out;
  }

  /** This process's buckets. */
  protected own(): IterableIterator<[string, BucketView]> {
    return this.buckets.entries();
  }

  /** This process's view of one bucket, if it used it. */
  protected ownView(key: string): BucketView | undefined {
    return this.buckets.get(key);
  }

  private bucket(key: string, now: number): Bucket {
    let b = this.buckets.get(key);
    if (!b) {
      b = { sent: [], pausedUntil: 0, learned: false, limitedBelow: new Map(), usedAt: now };
      this.buckets.set(key, b);
    }
    b.usedAt = Math.max(b.usedAt, now);
    return b;
  }

  /** Forgets the buckets idle for IDLE_BUCKET_MS (see there), at most once per SWEEP_EVERY_MS. */
  protected forgetIdle(now: number): void {
    if (now < this.sweptAt + SWEEP_EVERY_MS) return;
    this.sweptAt = now;
    for (const [key, b] of this.buckets) {
      if (b.usedAt + IDLE_BUCKET_MS > now || b.pausedUntil > now) continue;
      const last = b.sent.at(-1);
      const window = this.policy.limitOf(key, true)?.windowMs ?? UNKNOWN_LIMIT_HISTORY_MS;
      if (last === undefined || last + window <= now) this.buckets.delete(key);
    }
  }

  /** A bucket's limit as known now: documented, or learned from a 429 here or in another process. */
  protected limitFor(key: string): BucketLimit | undefined {
    return this.policy.limitOf(key, (this.buckets.get(key)?.learned ?? false) || this.extra(key).learned);
  }

  wait(key: string, reserve: number, now: number): number {
    const b = this.buckets.get(key);
    const others = this.extra(key);
    const limit = this.limitFor(key);
    const kept = limit?.alone ? 0 : reserve;
    const usable = limit ? limit.capacity - Math.floor(limit.capacity * kept) : Number.POSITIVE_INFINITY;
    if (usable < 1) return Number.POSITIVE_INFINITY;
    if (!b && others === NOTHING) return 0;
    const paused = Math.max(0, (b?.pausedUntil ?? 0) - now, others.pausedUntil - now);
    const history = limit?.windowMs ?? UNKNOWN_LIMIT_HISTORY_MS;
    if (b) while (b.sent.length > 0 && b.sent[0]! + history <= now) b.sent.shift();
    if (!limit) return paused;
    const inWindow = (at: number) => at + limit.windowMs > now;
    const sent = mergeSorted(b?.sent ?? [], others.sent.filter(inWindow));
    if (sent.length < usable) return paused;
    // The write that must leave the window before there is room again.
    const leaving = sent[sent.length - usable] ?? now;
    return Math.max(paused, leaving + limit.windowMs - now);
  }

  spend(buckets: readonly string[], now: number): void {
    for (const key of buckets) this.bucket(key, now).sent.push(now);
    this.forgetIdle(now);
  }

  refund(buckets: readonly string[], grantedAt: number): void {
    for (const key of buckets) {
      const sent = this.buckets.get(key)?.sent;
      const at = sent?.lastIndexOf(grantedAt) ?? -1;
      if (at >= 0) sent?.splice(at, 1);
    }
  }

  pause(key: string, ms: number, now: number): void {
    const b = this.bucket(key, now);
    b.pausedUntil = Math.max(b.pausedUntil, now + ms);
    b.learned = true;
  }

  limitedWithin(wide: string, narrow: string, now: number): boolean {
    if (this.policy.unnamedIsNarrow) return false;
    const b = this.bucket(wide, now);
    if (!this.spentAlone(wide, narrow, now)) b.limitedBelow.set(narrow, now);
    for (const [k, at] of b.limitedBelow) if (at + ESCALATE_WINDOW_MS <= now) b.limitedBelow.delete(k);
    // Counted with the other replicas' 429s: together they learn a workspace's tier as soon as one would.
    const parts = new Set(b.limitedBelow.keys());
    for (const [k, at] of this.extraBelow(wide)) if (at + ESCALATE_WINDOW_MS > now) parts.add(k);
    return parts.size >= ESCALATE_AFTER;
  }

  /**
   * Whether `narrow` alone sent as many writes as `wide` takes in its window (counted
   * while `narrow`'s own limit is unknown, so its history reaches that far back). Its
   * 429 is then its own limit's (Slack's chat.update per channel), not a sign that the
   * wide bucket is spent: the wide bucket had just taken that many without a 429. Taken
   * for the workspace's, two busy channels' 429s held every channel to the documented
   * tier, and at once behind the minute of writes taken at a higher rate before it: every
   * answer's final text waited up to a minute. (Replicas publish a channel's writes of
   * its own window only, a second: among replicas this counts mostly this process's.)
   */
  private spentAlone(wide: string, narrow: string, now: number): boolean {
    const limit = this.policy.limitOf(wide, true);
    if (!limit) return false;
    const inWindow = (at: number) => at + limit.windowMs > now;
    const own = this.buckets.get(narrow)?.sent.filter(inWindow).length ?? 0;
    return own + this.extra(narrow).sent.filter(inWindow).length >= limit.capacity;
  }
}

/** Two ascending lists as one. */
function mergeSorted(a: number[], b: number[]): number[] {
  if (b.length === 0) return a;
  if (a.length === 0) return b;
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i]! <= b[j]!)) out.push(a[i++]!);
    else out.push(b[j++]!);
  }
  return out;
}
