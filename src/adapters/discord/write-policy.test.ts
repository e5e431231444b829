import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DiscordEmulator } from "../../../test/emulators/discord/index.js";
import { RateLimitedError } from "../../runtime/message-ops.js";
import { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import {
  channelBuckets,
  discordRoute,
  discordWritePolicy,
  GLOBAL,
  learnFrom,
  scheduledFetch,
} from "./write-policy.js";

let emulator: DiscordEmulator;

beforeEach(async () => {
  emulator = await DiscordEmulator.start();
});

afterEach(async () => {
  await emulator.stop();
});

describe("Discord's write policy", () => {
  it("knows the bot's global limit, a channel's message writes and a thread's renames; other buckets are learned", () => {
    const limit = (bucket: string) => discordWritePolicy.limitOf(bucket, false);
    expect(limit(GLOBAL)).toEqual({ capacity: 50, windowMs: 1_050 });
    expect(limit("discord:channel:123")).toEqual({ capacity: 5, windowMs: 5_500 });
    expect(limit("discord:rename:456")).toEqual({ capacity: 2, windowMs: 600_000 });
    for (const bucket of ["discord:threads:123", "discord:typing:123", "discord:webhook:abc"])
      expect(limit(bucket)).toBeUndefined();
  });
});

describe("Discord requests through the write scheduler", () => {
  it("gives back the place of a request refused with a global 429: discord.js's retry waits out the 429, not a whole window", async () => {
    // The emulator's second feels busier than the bot's book: requests that left a window
    // apart can arrive inside one second of the server's (its event loop, or the network,
    // held the first ones back).
    emulator.limiter.options.globalPerSecond = 1;
    const scheduler = new WriteScheduler({
      limitOf: (bucket) => (bucket === GLOBAL ? { capacity: 2, windowMs: 60_000 } : undefined),
    });
    const get = () =>
      scheduledFetch(scheduler)(`${emulator.apiUrl}/v10/gateway/bot`, {
        method: "GET",
        headers: { authorization: `Bot ${emulator.token}` },
      });
    expect((await get()).status).toBe(200);
    const refused = await get();
    expect(refused.status).toBe(429);
    expect(refused.headers.get("x-ratelimit-global")).toBe("true");
    // One request counts in the book's minute, not two: the next may go once the 429's pause
    // (what is left of the emulator's second) is over, not a minute later.
    const wait = scheduler.waitFor([GLOBAL], "final");
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(1_000);
  });
});

describe("interaction replies' budgets", () => {
  const webhook = (token: string) =>
    `${emulator.apiUrl}/v10/webhooks/${emulator.state.applicationId}/${token}/messages/@original`;
  const deferred = async (channel: string) => {
    const rec = emulator.slash("ask", { question: "hi" }, channel, emulator.state.alice.id);
    const res = await fetch(`${emulator.apiUrl}/v10/interactions/${rec.id}/${rec.token}/callback`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ type: 5 }),
    });
    expect(res.status).toBe(204);
    return rec;
  };

  it("keeps each interaction's replies in a bucket of its own: one spent token pauses no other", async () => {
    const s = emulator.state;
    const first = await deferred(s.general);
    const second = await deferred(s.general);
    // Discord's tokens all start alike (base64 of "interaction:"); only the whole token differs.
    expect(first.token.slice(0, 16)).toBe(second.token.slice(0, 16));
    const scheduler = new WriteScheduler(discordWritePolicy);
    const edit = (token: string, n: number) =>
      scheduledFetch(scheduler)(webhook(token), {
        method: "PATCH",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ content: `edit ${n}` }),
      });
    let last: Response | undefined;
    for (let n = 0; n < 5; n++) last = await edit(first.token, n);
    expect(last?.headers.get("x-ratelimit-remaining")).toBe("0");
    const [spent] = discordRoute("PATCH", webhook(first.token)).buckets;
    const [other] = discordRoute("PATCH", webhook(second.token)).buckets;
    expect(scheduler.waitFor([spent ?? ""], "final")).toBeGreaterThan(0);
    expect(scheduler.waitFor([other ?? ""], "final")).toBe(0);
    // The bucket's name is shared with other replicas and logged: it never carries the token.
    for (const bucket of [spent, other]) {
      expect(bucket).toMatch(/^discord:webhook:/);
      expect(bucket).not.toContain(first.token.slice(0, 16));
    }
  });
});

describe("what Discord's answers teach the scheduler", () => {
  const post = discordRoute("POST", "https://discord.com/api/v10/channels/111111111/messages");
  const other = "discord:channel:222222222";
  const json = (body: unknown, status: number, headers: Record<string, string> = {}) =>
    new Response(JSON.stringify(body), {
      status,
      headers: { "content-type": "application/json", ...headers },
    });
  const scheduler = () => new WriteScheduler(discordWritePolicy);
  // A pause of `ms` leaves a wait of about `ms` (the clock moved a little since).
  const near = (ms: number) => [ms - 200, ms] as const;

  it("pauses only the call's own bucket for a 429 without rate-limit headers, for the body's retry_after", async () => {
    const s = scheduler();
    const paused = await learnFrom(
      s,
      post,
      json({ message: "You are being rate limited.", retry_after: 2.5, global: false }, 429),
    );
    expect(paused).toEqual({ bucket: "discord:channel:111111111", waitMs: 2_500 });
    const wait = s.waitFor(["discord:channel:111111111"], "final");
    expect(wait).toBeGreaterThan(near(2_500)[0]);
    expect(wait).toBeLessThanOrEqual(near(2_500)[1]);
    // Nothing else stops: another channel, and the rest of the bot.
    expect(s.waitFor([other], "final")).toBe(0);
    expect(s.waitFor([GLOBAL], "final")).toBe(0);
  });

  it("pauses nothing of the bot's for a route's own 429 where the route has no bucket but the global one", async () => {
    const s = scheduler();
    for (const [method, url] of [
      ["GET", "https://discord.com/api/v10/channels/111111111/messages?limit=50"],
      ["POST", "https://discord.com/api/v10/users/@me/channels"],
      ["PUT", "https://discord.com/api/v10/applications/1/commands"],
    ] as const) {
      const route = discordRoute(method, url);
      expect(route.buckets).toEqual([GLOBAL]);
      const limited = json({ retry_after: 30, global: false }, 429, { "x-ratelimit-reset-after": "30" });
      expect(await learnFrom(s, route, limited)).toEqual({ bucket: undefined, waitMs: 30_000 });
    }
    expect(s.waitFor([GLOBAL], "final")).toBe(0);
    expect(s.waitFor(["discord:channel:111111111", GLOBAL], "final")).toBe(0);
  });

  it("pauses only their channels for 429s in two channels that were not global, never the whole bot", async () => {
    const s = scheduler();
    // discord.js refuses early under rejectOnRateLimit, or a route's own 429: not global, so no bucket named.
    const limitedOnce = (channel: string) => {
      let limited = false;
      return s.run({
        lane: "final",
        buckets: channelBuckets(channel),
        run: async () => {
          if (limited) return;
          limited = true;
          throw new RateLimitedError(3_000);
        },
      });
    };
    vi.useFakeTimers();
    try {
      const writes = [limitedOnce("A"), limitedOnce("B")];
      await vi.advanceTimersByTimeAsync(10);
      expect(s.stats.limited).toBe(2);
      expect(s.waitFor(channelBuckets("A"), "final")).toBe(2_990);
      expect(s.waitFor(channelBuckets("C"), "final")).toBe(0);
      await vi.advanceTimersByTimeAsync(3_000);
      await Promise.all(writes);
    } finally {
      vi.useRealTimers();
    }
  });

  it("pauses the whole bot for a global 429, said in the body alone", async () => {
    const s = scheduler();
    expect(await learnFrom(s, post, json({ retry_after: 0.8, global: true }, 429))).toEqual({
      bucket: GLOBAL,
      waitMs: 800,
    });
    expect(s.waitFor([other, GLOBAL], "final")).toBeGreaterThan(near(800)[0]);
  });

  it("takes the headers' reset over the body's retry_after, and waits a second when neither says", async () => {
    const s = scheduler();
    const headed = await learnFrom(
      s,
      post,
      json({ retry_after: 9 }, 429, { "x-ratelimit-reset-after": "1.25", "x-ratelimit-bucket": "abc" }),
    );
    expect(headed?.waitMs).toBe(1_250);
    const bare = await learnFrom(s, post, new Response("busy", { status: 429 }));
    expect(bare?.waitMs).toBe(1_000);
  });

  it("pauses a bucket a success says is spent until it resets, and nothing for one with room left", async () => {
    const s = scheduler();
    const ok = (remaining: string) =>
      json({ id: "1" }, 200, { "x-ratelimit-remaining": remaining, "x-ratelimit-reset-after": "3" });
    expect(await learnFrom(s, post, ok("2"))).toBeUndefined();
    expect(s.waitFor(["discord:channel:111111111"], "final")).toBe(0);
    await learnFrom(s, post, ok("0"));
    expect(s.waitFor(["discord:channel:111111111"], "final")).toBeGreaterThan(near(3_000)[0]);
    expect(s.waitFor([other, GLOBAL], "final")).toBe(0);
  });
});
