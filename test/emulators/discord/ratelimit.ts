import { createHash } from "node:crypto";

export interface RateLimitOptions {
  /** Answer 429 past the limits (and send X-RateLimit-* headers, see `headers`). Default true. */
  enabled: boolean;
  /**
   * Send `X-RateLimit-*` headers (default true). When false, no response carries any: not
   * the bucket headers on successes, not `X-RateLimit-Scope` or `X-RateLimit-Global` on
   * 429s, which keep only `Retry-After` and the JSON body `{message, retry_after, global}`.
   * Discord calls its headers optional and answers some 429s this way (limits enforced in
   * front of the API, such as Cloudflare's, and hidden per-resource ones); this mode makes
   * every limit look like that, so a client meets what it does not see coming.
   *
   * What @discordjs/rest 2.x (SequentialHandler) does then, read from its source:
   * - a response without `X-RateLimit-Remaining` / `-Reset-After` leaves the bucket at
   *   "1 remaining, resets now", so the client never waits before a request: the 6th
   *   write in a channel is sent and meets a 429 instead of being held back;
   * - it reads a 429's `Retry-After` and nothing of its body: without
   *   `X-RateLimit-Global` the 429 is not global (`RateLimitData.global` is false even when
   *   the body says `global: true`, and other routes are not paused), and without
   *   `X-RateLimit-Scope` its scope is "user";
   * - the 429 is handled as a "sublimit": `rejectOnRateLimit` is asked (and may throw a
   *   RateLimitError); if it does not, the request sleeps Retry-After (+ `offset`) and is
   *   sent again, however many times, whatever `retries` says, while the rest of the queue
   *   for that route goes on and meets its own 429s;
   * - `RESTEvents.RateLimited` is never emitted for it (only for waits the headers
   *   announce); the `response` event is the one place the 429 shows.
   * The BurstHandler (interaction callbacks) never reads bucket headers, so this mode
   * changes nothing for it.
   */
  headers: boolean;
  /** Message writes (sends and edits) per channel per window. Default 5. */
  perChannel: number;
  /** Default 5,000 ms. */
  windowMs: number;
  /** Channel/thread renames per channel per window. Default 2. */
  renames: number;
  /** Default 600,000 ms. */
  renameWindowMs: number;
  /**
   * Threads created per parent channel per window (from a message, or without one, as
   * forum posts). Default 5. Discord publishes no number for this: it answers thread
   * creations past a hidden limit with a `shared`-scope 429 whose retry_after runs to
   * minutes (discord/discord-api-docs#7816 reports 219 s after "multiple rapid requests"
   * on one channel). 5 per 5 minutes is an assumption, chosen low so a bot that opens a
   * thread per mention meets the limit in tests rather than in a busy channel.
   */
  threads: number;
  /** Default 300,000 ms (see `threads`). */
  threadWindowMs: number;
  /**
   * Requests per second for the whole bot (the global limit), across every route that
   * takes the bot token; interaction callbacks and interaction webhooks are exempt, as
   * on Discord. Default 50. Not shortened by `speed`: it is already a one-second window,
   * and @discordjs/rest keeps itself under it (`globalRequestsPerSecond: 50`).
   */
  globalPerSecond: number;
  /** Divides every per-route window, so tests can run Discord's real limits faster. Default 1. */
  speed: number;
}

export const defaultRateLimits: RateLimitOptions = {
  enabled: true,
  headers: true,
  perChannel: 5,
  windowMs: 5_000,
  renames: 2,
  renameWindowMs: 600_000,
  threads: 5,
  threadWindowMs: 300_000,
  globalPerSecond: 50,
  speed: 1,
};

export interface Verdict {
  ok: boolean;
  headers: Record<string, string>;
  retryAfterMs: number;
}

export type ForcedKind = "edit" | "post" | "rename" | "thread" | "any";

interface Forced {
  kind: ForcedKind;
  /** Remaining forced 429s; Infinity until cleared. */
  left: number;
  retryAfterMs: number;
  /** Only requests whose path contains it (a message's id), when given. */
  path?: string;
}

/** Fixed-window buckets per (bucket name, channel), answering as Discord's headers do. */
export class RateLimiter {
  options: RateLimitOptions;
  /** Every 429 sent, by kind. */
  readonly hits: { kind: string; path: string; at: number }[] = [];
  private readonly buckets = new Map<string, { used: number; resetAt: number }>();
  private global = { used: 0, resetAt: 0 };
  private forced: Forced[] = [];

  constructor(options: Partial<RateLimitOptions> = {}) {
    this.options = { ...defaultRateLimits, ...options };
  }

  force(kind: ForcedKind, retryAfterMs: number, count = Number.POSITIVE_INFINITY, path?: string): void {
    this.forced.push({ kind, left: count, retryAfterMs, ...(path ? { path } : {}) });
  }

  clearForced(): void {
    this.forced = [];
  }

  /** Takes one request from the bucket; `kind` says which forced-429 rules apply. */
  take(bucket: string, kind: Exclude<ForcedKind, "any">, path: string): Verdict {
    const forced = this.forced.find(
      (f) =>
        f.left > 0 &&
        (f.kind === kind || f.kind === "any") &&
        (f.path === undefined || path.includes(f.path)),
    );
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

  /**
   * Takes one request from the bot's global budget (a fixed one-second window). Past it,
   * the verdict carries Discord's global headers: `X-RateLimit-Global` (which
   * @discordjs/rest reads to pause every route) and `X-RateLimit-Scope: global`.
   */
  takeGlobal(path: string): Verdict {
    if (!this.options.enabled) return { ok: true, retryAfterMs: 0, headers: {} };
    const now = Date.now();
    if (now >= this.global.resetAt) this.global = { used: 0, resetAt: now + 1_000 };
    if (this.global.used < this.options.globalPerSecond) {
      this.global.used += 1;
      return { ok: true, retryAfterMs: 0, headers: {} };
    }
    const retryAfterMs = this.global.resetAt - now;
    this.hits.push({ kind: "global", path, at: now });
    return { ok: false, retryAfterMs, headers: { "x-ratelimit-global": "true" } };
  }

  /** The headers a response may carry: without `headers`, none of the X-RateLimit-* ones. */
  visible(headers: Record<string, string>): Record<string, string> {
    if (this.options.headers) return headers;
    return Object.fromEntries(Object.entries(headers).filter(([name]) => !/^x-ratelimit-/i.test(name)));
  }

  private limits(kind: Exclude<ForcedKind, "any">): { limit: number; windowMs: number } {
    const o = this.options;
    if (kind === "rename") return { limit: o.renames, windowMs: o.renameWindowMs / o.speed };
    if (kind === "thread") return { limit: o.threads, windowMs: o.threadWindowMs / o.speed };
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
