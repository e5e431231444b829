/**
 * A token bucket shared by every reply that draws on the same platform quota (Slack
 * `chat.update` is Tier 3, ~50/min per workspace; Discord allows ~5 writes per 5 s per
 * channel). Waiters are served first come, first served.
 */
export class RateBudget {
  private readonly capacity: number;
  private readonly perMs: number;
  private tokens: number;
  private stamp = Date.now();
  private pausedUntil = 0;
  private readonly waiters: (() => void)[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(opts: { capacity: number; refillPerSec: number }) {
    if (!(opts.capacity >= 1) || !(opts.refillPerSec > 0)) {
      throw new RangeError("RateBudget needs capacity >= 1 and refillPerSec > 0");
    }
    this.capacity = opts.capacity;
    this.perMs = opts.refillPerSec / 1000;
    this.tokens = opts.capacity;
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
    this.pausedUntil = Math.max(this.pausedUntil, Date.now() + ms);
  }

  private refill(): void {
    const now = Date.now();
    this.tokens = Math.min(this.capacity, this.tokens + (now - this.stamp) * this.perMs);
    this.stamp = now;
  }

  private serve(): void {
    this.refill();
    const now = Date.now();
    // The tolerance absorbs floating-point drift in the refill arithmetic.
    while (this.waiters.length > 0 && now >= this.pausedUntil && this.tokens >= 1 - 1e-9) {
      this.tokens -= 1;
      this.waiters.shift()!();
    }
    if (this.waiters.length === 0 || this.timer) return;
    const wait = Math.max(this.pausedUntil - now, Math.ceil((1 - this.tokens) / this.perMs), 1);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.serve();
    }, wait);
  }
}
