import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DiscordEmulator } from "../../../test/emulators/discord/index.js";
import { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { GLOBAL, scheduledFetch } from "./write-policy.js";

let emulator: DiscordEmulator;

beforeEach(async () => {
  emulator = await DiscordEmulator.start();
});

afterEach(async () => {
  await emulator.stop();
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
