/**
 * Slack's per-method rate limits, per workspace (Tier 2 = 20/min, Tier 3 = 50/min,
 * Tier 4 = 100/min), with `chat.postMessage` at about one message per second per channel
 * after a short burst.
 * `speed` shortens Slack's minute so tests reach the limits quickly: speed 60 makes a
 * Slack minute last one second.
 *
 * Two modes, because Slack's documentation and a busy workspace disagree:
 * - the default, workspace mode, is what Slack documents: tiers are per app per workspace
 *   per method, so `chat.update` takes 50 calls a minute across all channels together;
 * - `SLACK_PER_CHANNEL_LIMITS` (option `perChannel`) is what bots report seeing in
 *   practice (UNVERIFIED, not in Slack's docs): `chat.update` and `chat.appendStream` are
 *   enforced closer to per channel, so one hot thread is limited long before the workspace
 *   is, and many threads in different channels update at once without a 429.
 * The load benchmark runs both: a writer must stay under the limits whichever is true.
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
  "files.info": 100,
  // Tier 2: Slack's method page, and Slack's Java SDK's table of tiers (MethodsRateLimits).
  "usergroups.users.list": 20,
  // Tier 3: Slack's Java SDK's table of tiers (MethodsRateLimits).
  "conversations.open": 50,
  "files.getUploadURLExternal": 100,
  "files.completeUploadExternal": 100,
  "agents.sessions.setStatus": 50,
  "agents.sessions.rename": 50,
  "views.open": 100,
  "views.update": 100,
  "views.push": 100,
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

/**
 * The per-channel mode (see the top of this file): `chat.update` 60 a minute per channel
 * (one a second) and `chat.appendStream` 120 a minute per channel (two a second).
 * `chat.postMessage` keeps its own per-channel bucket (about one a second after a burst of
 * 3); every other method (`chat.startStream` / `chat.stopStream` at Tier 2, reactions,
 * `assistant.*`) stays per workspace as in the default mode. Combine with `speed`:
 * `SlackEmulator.start({ rateLimits: { ...SLACK_PER_CHANNEL_LIMITS, speed: 60 } })`.
 */
export const SLACK_PER_CHANNEL_LIMITS: Partial<RateLimitOptions> = {
  perChannel: { "chat.update": 60, "chat.appendStream": 120 },
};

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
  /**
   * Methods limited per channel instead of per workspace, in calls per Slack minute per
   * channel (a sliding window, shortened by `speed`); the channel is the call's `channel`
   * or `channel_id`. A method listed here ignores `perMinute`. `chat.postMessage` is per
   * channel in either mode; an entry for it sets its sustained rate like `perMinute`.
   * Default none: the workspace mode.
   */
  perChannel: Record<string, number>;
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
  readonly limited: { method: string; at: number; forced: boolean; channel?: string | undefined }[] = [];

  constructor(options: Partial<RateLimitOptions> = {}) {
    this.options = ownCopy({
      enabled: true,
      speed: 1,
      perMinute: {},
      perChannel: {},
      postMessageBurst: POST_MESSAGE_BURST,
      failEveryNthWrite: 0,
      forcedRetryAfter: 0,
      ...options,
    });
  }

  configure(options: Partial<RateLimitOptions>): void {
    this.options = ownCopy({ ...this.options, ...options });
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
    const perChannel = o.perChannel[method];
    if (perChannel !== undefined) return this.slide(perChannel, now, method, channel ?? "");
    const limit = o.perMinute[method] ?? DEFAULT_PER_MINUTE[method];
    if (limit === undefined) return { limited: false, retryAfter: 0 };
    return this.slide(limit, now, method);
  }

  /**
   * A sliding window of one Slack minute over the calls of `method`, in the workspace or,
   * given a `channel`, in that channel. Retry-After is the whole seconds until the oldest
   * call leaves the window, at least 1, as Slack sends it.
   */
  private slide(limit: number, now: number, method: string, channel?: string): RateDecision {
    const key = channel === undefined ? method : `${method} in ${channel}`;
    const windowMs = 60_000 / this.options.speed;
    const calls = (this.windows.get(key) ?? []).filter((t) => t > now - windowMs);
    this.windows.set(key, calls);
    if (calls.length >= limit) {
      const waitMs = (calls[0] ?? now) + windowMs - now;
      this.limited.push({ method, channel, at: now, forced: false });
      return { limited: true, retryAfter: Math.max(1, Math.ceil(waitMs / 1000)) };
    }
    calls.push(now);
    return { limited: false, retryAfter: 0 };
  }

  /**
   * A token bucket per channel: `postMessageBurst` tokens, refilled at the sustained rate.
   * Retry-After is the whole seconds until the next token (at least 1, as Slack sends it).
   */
  private postMessage(channel: string, now: number): RateDecision {
    const o = this.options;
    const perMinute =
      o.perChannel["chat.postMessage"] ??
      o.perMinute["chat.postMessage"] ??
      POST_MESSAGE_PER_CHANNEL_PER_MINUTE;
    const perSecond = (perMinute / 60) * o.speed;
    const burst = Math.max(1, o.postMessageBurst);
    const bucket = this.buckets.get(channel) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * perSecond);
    bucket.at = now;
    this.buckets.set(channel, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { limited: false, retryAfter: 0 };
    }
    this.limited.push({ method: "chat.postMessage", at: now, forced: false, channel });
    const waitMs = ((1 - bucket.tokens) / perSecond) * 1000;
    return { limited: true, retryAfter: Math.max(1, Math.ceil(waitMs / 1000)) };
  }
}

/** The limiter's own tables, so that changing them never changes a shared profile such as SLACK_PER_CHANNEL_LIMITS. */
function ownCopy(o: RateLimitOptions): RateLimitOptions {
  return { ...o, perMinute: { ...o.perMinute }, perChannel: { ...o.perChannel } };
}
