import { createHash } from "node:crypto";
import { log } from "../../log.js";
import type {
  BucketLimit,
  CallOptions,
  Lane,
  WritePolicy,
  WriteScheduler,
} from "../../runtime/scheduler/write-scheduler.js";

/**
 * Discord's budgets as the scheduler sees them (PLATFORMS.md): 50 requests per second for
 * the whole bot, and per route buckets, of which message writes (about 5 per 5 s per
 * channel) and renames (2 per 10 min) matter. Interaction callbacks and webhooks are
 * outside the global limit. Windows carry a margin for requests that arrive closer
 * together than they left.
 */
export const GLOBAL = "discord:global";
const LIMITS: Record<string, BucketLimit> = {
  global: { capacity: 50, windowMs: 1_050 },
  channel: { capacity: 5, windowMs: 5_500 },
  rename: { capacity: 2, windowMs: 600_000 },
};

export const discordWritePolicy: WritePolicy = {
  limitOf(bucket) {
    // `discord:{kind}` or `discord:{kind}:{id}`, read without splitting (asked at every pick).
    const from = bucket.indexOf(":") + 1;
    const to = bucket.indexOf(":", from);
    return LIMITS[to === -1 ? bucket.slice(from) : bucket.slice(from, to)];
  },
  // A global 429 says so (its flag, `X-RateLimit-Global`): any other is its route's own.
  unnamedIsNarrow: true,
};

/** The buckets of one message write in `channel` (posts, edits, deletes). */
export function channelBuckets(channel: string): string[] {
  return [`discord:channel:${channel}`, GLOBAL];
}

/**
 * The bucket of one interaction's replies (its webhook: `@original` edits, follow-ups).
 * Every token starts with base64 of "interaction:", so only the whole token tells two
 * apart; it is hashed because bucket names are logged and shared with other replicas
 * through the store, and the token is the credential of those writes.
 */
export function webhookBucket(token: string): string {
  return `discord:webhook:${createHash("sha256").update(token).digest("base64url").slice(0, 22)}`;
}

interface Route {
  buckets: string[];
  lane: Lane;
  options?: CallOptions;
}

/** What a REST call is, from its method and path (`/api/v10/...`). */
export function discordRoute(method: string, url: string): Route {
  const path = new URL(url).pathname.replace(/^\/api(\/v\d+)?/, "");
  if (/^\/interactions\/\d+\/[^/]+\/callback$/.test(path)) return { buckets: [], lane: "first" };
  const webhook = /^\/webhooks\/(\d+)\/([^/?]+)/.exec(path);
  // An interaction's token is its own bucket; the 3 s / 15 min clocks make these urgent.
  if (webhook) return { buckets: [webhookBucket(webhook[2] ?? "")], lane: "final" };
  if (method === "GET") return { buckets: [GLOBAL], lane: "final" };
  const channel = /^\/channels\/(\d+)(\/.*)?$/.exec(path);
  if (channel) {
    const [, id, rest = ""] = channel;
    if (/\/threads$/.test(rest)) return { buckets: [`discord:threads:${id}`, GLOBAL], lane: "first" };
    if (rest === "/typing") {
      return {
        buckets: [`discord:typing:${id}`, GLOBAL],
        lane: "background",
        options: { dropAfterMs: 1_000 },
      };
    }
    if (rest === "" && method === "PATCH") {
      // A thread is named at creation; its rename comes last and only when the bot is not busy.
      return {
        buckets: [`discord:rename:${id}`, GLOBAL],
        lane: "background",
        options: { dropAfterMs: 10_000 },
      };
    }
    if (rest.startsWith("/messages")) return { buckets: channelBuckets(id ?? ""), lane: "final" };
  }
  return { buckets: [GLOBAL], lane: "final" };
}

const headerMs = (res: Response, name: string): number | undefined => {
  const v = res.headers.get(name);
  const n = v === null ? Number.NaN : Number(v);
  return Number.isFinite(n) ? n * 1000 : undefined;
};

/**
 * What a response teaches about the budgets: a bucket with nothing remaining is paused
 * until it resets; a 429 pauses the bucket it names (the whole bot for a global one), or,
 * when it comes without rate-limit headers, the call's narrowest bucket for Retry-After
 * (none for a route that has only the global one).
 * A 429 is returned as what it paused, and for how long.
 */
export async function learnFrom(
  scheduler: WriteScheduler,
  route: Route,
  res: Response,
): Promise<{ bucket: string | undefined; waitMs: number } | undefined> {
  const narrow = route.buckets[0];
  if (res.status !== 429) {
    const resetAfter = headerMs(res, "x-ratelimit-reset-after");
    if (narrow && narrow !== GLOBAL && res.headers.get("x-ratelimit-remaining") === "0" && resetAfter) {
      scheduler.pause(narrow, resetAfter);
    }
    return undefined;
  }
  let body: { retry_after?: number; global?: boolean } = {};
  try {
    body = (await res.clone().json()) as typeof body;
  } catch {}
  const global = res.headers.get("x-ratelimit-global") === "true" || body.global === true;
  const wait =
    headerMs(res, "x-ratelimit-reset-after") ??
    (typeof body.retry_after === "number" ? body.retry_after * 1000 : undefined) ??
    headerMs(res, "retry-after") ??
    1_000;
  // A route the bot keeps no bucket of its own for (reads, DM opens, command registration)
  // is waited out by discord.js's queue for that route alone: pausing the bot's global
  // bucket for it would stop every answer's writes, on every replica that shares budgets.
  const bucket = global ? GLOBAL : narrow === GLOBAL ? undefined : narrow;
  if (bucket) scheduler.pause(bucket, wait);
  log.debug({ bucket, waitMs: wait }, "discord rate limit: bucket paused");
  return { bucket, waitMs: wait };
}

/**
 * discord.js's request function, through the bot's write scheduler: every REST call
 * (its own queue waits out what it waits out, then calls this) runs when its lane and
 * budgets allow. A call made inside a granted reply write passes straight through.
 */
export function scheduledFetch(scheduler: WriteScheduler) {
  return async (url: string, init: RequestInit): Promise<Response> => {
    const route = discordRoute(init.method ?? "GET", url);
    const send = async () => {
      const res = await fetch(url, init);
      await learnFrom(scheduler, route, res);
      return res;
    };
    const ctx = scheduler.callContext();
    const what = () => `${init.method ?? "GET"} ${new URL(url).pathname.replace(/\d{6,}/g, ":id")}`;
    if (ctx?.granted) {
      if (ctx.span) scheduler.passedThrough(ctx, what());
      return send();
    }
    return scheduler.run({
      lane: ctx?.lane ?? route.lane,
      buckets: route.buckets,
      ...route.options,
      ...(ctx?.dropAfterMs !== undefined ? { dropAfterMs: ctx.dropAfterMs } : {}),
      ...(ctx?.signal ? { signal: ctx.signal } : {}),
      what: what(),
      run: async () => {
        const res = await send();
        // discord.js asks again itself, as a new write: this one's grant was not spent.
        if (res.status === 429) scheduler.callContext()?.refused?.();
        return res;
      },
    });
  };
}
