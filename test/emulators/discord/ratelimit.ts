import { createHash } from "node:crypto";

export interface RateLimitOptions {
  /** Send X-RateLimit-* headers and answer 429 past the limits. Default true. */
  enabled: boolean;
  /** Message writes (sends and edits) per channel per window. Default 5. */
  perChannel: number;
  /** Default 5,000 ms. */
  windowMs: number;
  /** Channel/thread renames per channel per window. Default 2. */
  renames: number;
  /** Default 600,000 ms. */
  renameWindowMs: number;
  /** Divides every window, so tests can run Discord's real limits faster. Default 1. */
  speed: number;
}

export const defaultRateLimits: RateLimitOptions = {
  enabled: true,
  perChannel: 5,
  windowMs: 5_000,
  renames: 2,
  renameWindowMs: 600_000,
  speed: 1,
};

export interface Verdict {
  ok: boolean;
  headers: Record<string, string>;
  retryAfterMs: number;
}

export type ForcedKind = "edit" | "post" | "rename" | "any";

interface Forced {
  kind: ForcedKind;
  /** Remaining forced 429s; Infinity until cleared. */
  left: number;
  retryAfterMs: number;
}

/** Fixed-window buckets per (bucket name, channel), answering as Discord's headers do. */
export class RateLimiter {
  options: RateLimitOptions;
  /** Every 429 sent, by kind. */
  readonly hits: { kind: string; path: string; at: number }[] = [];
  private readonly buckets = new Map<string, { used: number; resetAt: number }>();
  private forced: Forced[] = [];

  constructor(options: Partial<RateLimitOptions> = {}) {
    this.options = { ...defaultRateLimits, ...options };
  }

  force(kind: ForcedKind, retryAfterMs: number, count = Number.POSITIVE_INFINITY): void {
    this.forced.push({ kind, left: count, retryAfterMs });
  }

  clearForced(): void {
    this.forced = [];
  }

  /** Takes one request from the bucket; `kind` says which forced-429 rules apply. */
  take(bucket: string, kind: Exclude<ForcedKind, "any">, path: string): Verdict {
    const forced = this.forced.find((f) => f.left > 0 && (f.kind === kind || f.kind === "any"));
    if (forced) {
      forced.left -= 1;
      this.hits.push({ kind, path, at: Date.now() });
      return {
        ok: false,
        retryAfterMs: forced.retryAfterMs,
        headers: this.headers(bucket, 1, 0, forced.retryAfterMs),
      };
    }
    if (!this.options.enabled) return { ok: true, retryAfterMs: 0, headers: {} };
    const { limit, windowMs } = this.limits(kind);
    const now = Date.now();
    let b = this.buckets.get(bucket);
    if (!b || now >= b.resetAt) {
      b = { used: 0, resetAt: now + windowMs };
      this.buckets.set(bucket, b);
    }
    const resetAfter = b.resetAt - now;
    if (b.used >= limit) {
      this.hits.push({ kind, path, at: now });
      return { ok: false, retryAfterMs: resetAfter, headers: this.headers(bucket, limit, 0, resetAfter) };
    }
    b.used += 1;
    return { ok: true, retryAfterMs: 0, headers: this.headers(bucket, limit, limit - b.used, resetAfter) };
  }

  private limits(kind: Exclude<ForcedKind, "any">): { limit: number; windowMs: number } {
    const o = this.options;
    if (kind === "rename") return { limit: o.renames, windowMs: o.renameWindowMs / o.speed };
    return { limit: o.perChannel, windowMs: o.windowMs / o.speed };
  }

  private headers(
    bucket: string,
    limit: number,
    remaining: number,
    resetAfterMs: number,
  ): Record<string, string> {
    const hash = createHash("sha1")
      .update(bucket.split(":")[0] ?? bucket)
      .digest("hex")
      .slice(0, 16);
    return {
      "x-ratelimit-limit": String(limit),
      "x-ratelimit-remaining": String(remaining),
      "x-ratelimit-reset": ((Date.now() + resetAfterMs) / 1000).toFixed(3),
      "x-ratelimit-reset-after": (resetAfterMs / 1000).toFixed(3),
      "x-ratelimit-bucket": hash,
    };
  }
}
