import { ChannelType, RateLimitError, REST, RESTEvents, type RESTOptions, Routes } from "discord.js";
import { afterEach, describe, expect, it } from "vitest";
import { DiscordEmulator, type DiscordEmulatorOptions } from "./index.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function emulator(options: DiscordEmulatorOptions): Promise<DiscordEmulator> {
  const emu = await DiscordEmulator.start(options);
  cleanups.push(() => emu.stop());
  return emu;
}

interface Seen {
  status: number;
  headers: Headers;
}

/**
 * @discordjs/rest without retries, recording every response it receives (its `response`
 * event, the one place a 429 shows when it carries no rate-limit headers).
 */
function rest(emu: DiscordEmulator, options: Partial<RESTOptions> = {}): { rest: REST; seen: Seen[] } {
  const seen: Seen[] = [];
  const r = new REST({ api: emu.apiUrl, retries: 0, ...options }).setToken(emu.token);
  r.on(RESTEvents.Response, (_request, response) =>
    seen.push({ status: response.status, headers: response.headers }),
  );
  return { rest: r, seen };
}

/** A naive client: sends whatever it is asked to at once and fails on any 429. */
const naive = (emu: DiscordEmulator) =>
  rest(emu, { rejectOnRateLimit: () => true, globalRequestsPerSecond: 1_000 });

const rateLimitHeaders = (h: Headers) => [...h.keys()].filter((name) => name.startsWith("x-ratelimit-"));

const send = (r: REST, channelId: string, content: string) =>
  r.post(Routes.channelMessages(channelId), { body: { content } });

/** The raw answer to one more message in `channelId`, as any HTTP client sees it. */
async function rawSend(emu: DiscordEmulator, channelId: string) {
  const res = await fetch(`${emu.apiUrl}/v10/channels/${channelId}/messages`, {
    method: "POST",
    headers: { authorization: `Bot ${emu.token}`, "content-type": "application/json" },
    body: JSON.stringify({ content: "one more" }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

describe("Discord emulator: 429s without rate-limit headers (headers: false)", () => {
  it("lets a naive client send a 6th message in a channel at once and answers it 429 with only Retry-After", async () => {
    // At full speed (a 5-second window) so that a busy machine cannot stretch six
    // requests past the window and see no 429; nothing here waits the window out.
    const emu = await emulator({ rateLimits: { headers: false } });
    const { rest: r, seen } = naive(emu);
    const general = emu.state.general;
    const results = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => send(r, general, `m${i}`)));
    expect(results.filter((x) => x.status === "fulfilled")).toHaveLength(5);
    const [error] = results.flatMap((x) => (x.status === "rejected" ? [x.reason as unknown] : []));
    // discord.js could not see the limit coming, so it sent the 6th and met the 429 ...
    expect(emu.limiter.hits.map((h) => h.kind)).toEqual(["post"]);
    expect(seen.map((s) => s.status)).toEqual([200, 200, 200, 200, 200, 429]);
    // ... which carried no X-RateLimit-* header, on the 429 or before it, but a Retry-After.
    expect(seen.flatMap((s) => rateLimitHeaders(s.headers))).toEqual([]);
    expect(Number(seen[5]?.headers.get("retry-after"))).toBeGreaterThan(0);
    // Without X-RateLimit-Scope and X-RateLimit-Global, discord.js calls it a per-user route limit.
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({ global: false, scope: "user", route: "/channels/:id/messages" });
    expect((error as RateLimitError).retryAfter).toBeGreaterThan(0);
    // The body is Discord's: message, retry_after in seconds, global.
    const raw = await rawSend(emu, general);
    expect(raw.status).toBe(429);
    expect(rateLimitHeaders(raw.headers)).toEqual([]);
    expect(Number(raw.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(raw.body).toEqual({
      message: "You are being rate limited.",
      retry_after: expect.any(Number),
      global: false,
    });
    expect(raw.body.retry_after).toBeLessThanOrEqual(5);
    expect(emu.botMessages(general)).toHaveLength(5);
  });

  it("with the headers on, the same naive client stops at 5 itself and the server never answers 429", async () => {
    // At full speed (a 5-second window), as the headerless test above: at 20x a busy
    // machine stretched the six requests past the 250 ms window, and all six went through.
    const emu = await emulator({ rateLimits: {} });
    const { rest: r, seen } = naive(emu);
    const general = emu.state.general;
    const results = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => send(r, general, `m${i}`)));
    expect(results.filter((x) => x.status === "fulfilled")).toHaveLength(5);
    expect(results.filter((x) => x.status === "rejected")).toHaveLength(1);
    expect(seen.map((s) => s.status)).toEqual([200, 200, 200, 200, 200]);
    expect(seen[4]?.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(emu.limiter.hits).toEqual([]);
  });

  it("leaves discord.js to resend after Retry-After on its own, unannounced, when it is not told to reject", async () => {
    const emu = await emulator({ rateLimits: { headers: false, speed: 20 } });
    // The defaults of @discordjs/rest, as most bots run it (retries: 0 does not stop 429 resends).
    const { rest: r, seen } = rest(emu);
    const announced: unknown[] = [];
    r.on(RESTEvents.RateLimited, (info) => announced.push(info));
    const general = emu.state.general;
    await Promise.all(Array.from({ length: 6 }, (_, i) => send(r, general, `m${i}`)));
    expect(emu.botMessages(general).map((m) => m.content)).toEqual(["m0", "m1", "m2", "m3", "m4", "m5"]);
    expect(seen.map((s) => s.status)).toEqual([200, 200, 200, 200, 200, 429, 200]);
    expect(announced).toEqual([]);
  });

  it("answers the 51st request of a second across 51 channels with a global 429, whether or not headers are sent", async () => {
    for (const headers of [true, false]) {
      const emu = await emulator({ rateLimits: { headers } });
      const channels = Array.from(
        { length: 52 },
        (_, i) => emu.state.addChannel({ type: ChannelType.GuildText, name: `load-${i}` }).id,
      );
      const { rest: r } = naive(emu);
      const results = await Promise.allSettled(channels.slice(0, 51).map((c) => send(r, c, "hello")));
      expect(results.filter((x) => x.status === "fulfilled")).toHaveLength(50);
      const rejected = results.flatMap((x) => (x.status === "rejected" ? [x.reason as unknown] : []));
      expect(rejected).toHaveLength(1);
      expect(rejected[0]).toBeInstanceOf(RateLimitError);
      // discord.js knows a global limit only by the X-RateLimit-Global header, never by the body.
      expect(rejected[0]).toMatchObject({ global: headers });
      const raw = await rawSend(emu, channels[51] ?? "");
      expect(raw.status).toBe(429);
      expect(raw.body).toMatchObject({ global: true });
      expect(raw.body.retry_after).toBeLessThanOrEqual(1);
      expect(Number(raw.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(raw.headers.get("x-ratelimit-global")).toBe(headers ? "true" : null);
      expect(raw.headers.get("x-ratelimit-scope")).toBe(headers ? "global" : null);
      expect(emu.limiter.hits.filter((h) => h.kind === "global")).toHaveLength(2);
    }
  });
});

describe("Discord emulator: thread creation stays configurable", () => {
  it("lets a benchmark raise the threads-per-parent limit (threads: 8)", async () => {
    const emu = await emulator({ rateLimits: { threads: 8 } });
    const { rest: r } = naive(emu);
    const open = (n: number) =>
      r.post(Routes.threads(emu.state.general), { body: { name: `t${n}`, type: ChannelType.PublicThread } });
    for (let n = 1; n <= 8; n++) await open(n);
    const err = await open(9).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    expect(err).toMatchObject({ scope: "shared", global: false });
    expect(emu.threads(emu.state.general)).toHaveLength(8);
  });
});
