/**
 * A budget shared by every reply that draws on the same platform quota, served first
 * come, first served. Either a token bucket (Slack `chat.update` is Tier 3, ~50/min per
 * workspace), or, with `windowMs`, at most `capacity` writes in any window of that length
 * (Discord allows 5 writes per 5 s per channel: a sliding window never breaks that rule,
 * and unlike a slowly refilling bucket it lets a thread's next answer show at once when
 * the last one wrote its few messages seconds ago).
 */
export class RateBudget {
  private readonly capacity: number;
  private readonly perMs: number;
  private tokens: number;
  private stamp = Date.now();
  private pausedUntil = 0;
  private readonly waiters: (() => void)[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;

  /** Window mode: when the last `capacity` writes went out. */
  private readonly windowMs: number | undefined;
  private readonly sent: number[] = [];

  constructor(opts: { capacity: number; refillPerSec: number } | { capacity: number; windowMs: number }) {
    const refill = "refillPerSec" in opts ? opts.refillPerSec : opts.capacity / (opts.windowMs / 1000);
    if (!(opts.capacity >= 1) || !(refill > 0)) {
      throw new RangeError("RateBudget needs capacity >= 1 and a positive refill or window");
    }
    this.capacity = opts.capacity;
    this.perMs = refill / 1000;
    this.tokens = opts.capacity;
    this.windowMs = "windowMs" in opts ? opts.windowMs : undefined;
  }

  /** Resolves when a write may go out. */
  take(): Promise<void> {
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      this.serve();
    });
  }

  /** After a 429 with Retry-After: nobody sharing this budget writes for `ms`. */
  pause(ms: number): void {
    this.refill();
    // The platform says the quota is spent: start refilling from empty.
    this.tokens = 0;
    if (this.windowMs !== undefined) {
      this.sent.length = 0;
      for (let i = 0; i < this.capacity; i++) this.sent.push(Date.now() + ms - this.windowMs);
    }
    this.pausedUntil = Math.max(this.pausedUntil, Date.now() + ms);
  }

  private refill(): void {
    const now = Date.now();
    if (this.windowMs !== undefined) {
      while (this.sent.length > 0 && (this.sent[0] ?? 0) + this.windowMs <= now) this.sent.shift();
      this.tokens = this.capacity - this.sent.length;
      this.stamp = now;
      return;
    }
    this.tokens = Math.min(this.capacity, this.tokens + (now - this.stamp) * this.perMs);
    this.stamp = now;
  }

  private serve(): void {
    this.refill();
    const now = Date.now();
    // The tolerance absorbs floating-point drift in the refill arithmetic.
    while (this.waiters.length > 0 && now >= this.pausedUntil && this.tokens >= 1 - 1e-9) {
      this.tokens -= 1;
      if (this.windowMs !== undefined) this.sent.push(now);
      this.waiters.shift()!();
    }
    if (this.waiters.length === 0 || this.timer) return;
    const refilled =
      this.windowMs !== undefined
        ? (this.sent[0] ?? now) + this.windowMs - now
        : Math.ceil((1 - this.tokens) / this.perMs);
    const wait = Math.max(this.pausedUntil - now, refilled, 1);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.serve();
    }, wait);
  }
}
