/**
 * Slack's per-method rate limits, per workspace (Tier 2 = 20/min, Tier 3 = 50/min,
 * Tier 4 = 100/min), with `chat.postMessage` at about one message per second per channel
 * after a short burst.
 * `speed` shortens Slack's minute so tests reach the limits quickly: speed 60 makes a
 * Slack minute last one second.
 */
export const DEFAULT_PER_MINUTE: Record<string, number> = {
  "chat.update": 50,
  "chat.delete": 50,
  "chat.postEphemeral": 100,
  "chat.startStream": 20,
  "chat.appendStream": 100,
  "chat.stopStream": 20,
  "assistant.threads.setStatus": 600,
  "assistant.threads.setTitle": 50,
  "assistant.threads.setSuggestedPrompts": 50,
  "reactions.add": 50,
  "reactions.remove": 20,
  "conversations.replies": 50,
  "conversations.history": 50,
  "users.info": 100,
  "files.getUploadURLExternal": 100,
  "files.completeUploadExternal": 100,
};

/**
 * `chat.postMessage` is limited per channel, not per workspace: "generally 1 message per
 * second per channel, short bursts allowed" (Slack's rate-limit docs; PLATFORMS.md). This is
 * the sustained rate; `perMinute["chat.postMessage"]` overrides it.
 */
export const POST_MESSAGE_PER_CHANNEL_PER_MINUTE = 60;

/**
 * How many `chat.postMessage` calls one channel takes at once before the sustained rate
 * applies. Slack does not publish the size of the "short bursts" it tolerates; 3 is an
 * assumption, kept small on purpose so a bot that posts in bursts meets 429s in tests
 * before it meets them in a busy workspace.
 */
export const POST_MESSAGE_BURST = 3;

/** The methods counted as "writes" by `failEveryNthWrite`. */
export const MESSAGE_WRITES = new Set([
  "chat.postMessage",
  "chat.update",
  "chat.startStream",
  "chat.appendStream",
  "chat.stopStream",
]);

export interface RateLimitOptions {
  /** Enforce the per-method limits (default true). */
  enabled: boolean;
  /** How many times faster than real time Slack's minute passes (default 1). */
  speed: number;
  /**
   * Overrides of calls per Slack minute, by method. For `chat.postMessage` this is the
   * sustained rate per channel (default 60, one a second).
   */
  perMinute: Record<string, number>;
  /** `chat.postMessage` calls a channel takes at once before the sustained rate applies (default 3). */
  postMessageBurst: number;
  /** Answer every n-th message write (see MESSAGE_WRITES) with a 429 (0 = off). */
  failEveryNthWrite: number;
  /** The Retry-After sent with forced 429s, in seconds (Slack sends whole seconds). */
  forcedRetryAfter: number;
}

export interface RateDecision {
  limited: boolean;
  retryAfter: number;
}

export class RateLimiter {
  options: RateLimitOptions;
  /** key -> timestamps (ms) of accepted calls inside the current window. */
  private readonly windows = new Map<string, number[]>();
  /** channel -> token bucket of chat.postMessage. */
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private writes = 0;
  /** Every 429 answered, for tests and benchmarks. */
  readonly limited: { method: string; at: number; forced: boolean }[] = [];

  constructor(options: Partial<RateLimitOptions> = {}) {
    this.options = {
      enabled: true,
      speed: 1,
      perMinute: {},
      postMessageBurst: POST_MESSAGE_BURST,
      failEveryNthWrite: 0,
      forcedRetryAfter: 0,
      ...options,
    };
  }

  configure(options: Partial<RateLimitOptions>): void {
    this.options = { ...this.options, ...options };
    this.writes = 0;
  }

  reset(): void {
    this.windows.clear();
    this.buckets.clear();
    this.writes = 0;
    this.limited.length = 0;
  }

  check(method: string, channel: string | undefined, now = Date.now()): RateDecision {
    const o = this.options;
    if (o.failEveryNthWrite > 0 && MESSAGE_WRITES.has(method)) {
      this.writes += 1;
      if (this.writes % o.failEveryNthWrite === 0) {
        this.limited.push({ method, at: now, forced: true });
        return { limited: true, retryAfter: o.forcedRetryAfter };
      }
    }
    if (!o.enabled) return { limited: false, retryAfter: 0 };
    if (method === "chat.postMessage") return this.postMessage(channel ?? "", now);
    const limit = o.perMinute[method] ?? DEFAULT_PER_MINUTE[method];
    if (limit === undefined) return { limited: false, retryAfter: 0 };
    const windowMs = 60_000 / o.speed;
    const calls = (this.windows.get(method) ?? []).filter((t) => t > now - windowMs);
    if (calls.length >= limit) {
      this.windows.set(method, calls);
      const waitMs = (calls[0] ?? now) + windowMs - now;
      this.limited.push({ method, at: now, forced: false });
      return { limited: true, retryAfter: Math.max(1, Math.ceil(waitMs / 1000)) };
    }
    calls.push(now);
    this.windows.set(method, calls);
    return { limited: false, retryAfter: 0 };
  }

  /**
   * A token bucket per channel: `postMessageBurst` tokens, refilled at the sustained rate.
   * Retry-After is the whole seconds until the next token (at least 1, as Slack sends it).
   */
  private postMessage(channel: string, now: number): RateDecision {
    const o = this.options;
    const perSecond =
      ((o.perMinute["chat.postMessage"] ?? POST_MESSAGE_PER_CHANNEL_PER_MINUTE) / 60) * o.speed;
    const burst = Math.max(1, o.postMessageBurst);
    const bucket = this.buckets.get(channel) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * perSecond);
    bucket.at = now;
    this.buckets.set(channel, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { limited: false, retryAfter: 0 };
    }
    this.limited.push({ method: "chat.postMessage", at: now, forced: false });
    const waitMs = ((1 - bucket.tokens) / perSecond) * 1000;
    return { limited: true, retryAfter: Math.max(1, Math.ceil(waitMs / 1000)) };
  }
}
