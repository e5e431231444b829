import { afterEach, describe, expect, it, vi } from "vitest";
import { waitFor } from "../../../test/emulators/discord/index.js";
import { log } from "../../log.js";
import { type Harness, startHarness } from "./harness.test-helper.js";

let h: Harness;

afterEach(async () => {
  vi.restoreAllMocks();
  await h?.close();
});

describe("Discord adapter: the gateway's health", () => {
  it("is not ready while its gateway connection is down, and ready again once it resumes", async () => {
    h = await startHarness();
    expect(h.adapter.ready()).toBe(true);
    // Resumes are not answered until release(): the bot is cut off from Discord's events meanwhile.
    h.emulator.dropConnection({ hold: true });
    await waitFor(() => !h.adapter.ready(), { message: "still reported ready with the gateway down" });
    h.emulator.release();
    await waitFor(() => h.adapter.ready(), { message: "not ready again after the resume" });
    expect(h.emulator.gateway.stats.resumes).toBeGreaterThan(0);
  });

  it("logs an error saying what to do when Discord closes the gateway for good (a reset token: 4004)", async () => {
    h = await startHarness();
    const error = vi.spyOn(log, "error");
    h.emulator.resetToken();
    h.emulator.dropConnection();
    const said = await waitFor(
      () => error.mock.calls.find(([fields]) => (fields as { code?: number }).code === 4004),
      // discord.js waits out its identify throttle (5 s) before it identifies again and meets the 4004.
      { message: "no error logged for the 4004 close", timeoutMs: 20_000 },
    );
    expect(said[1]).toBe(
      "Discord closed the gateway and will not take the bot back (4004, authentication failed): the token was refused. Set DISCORD_TOKEN to the bot's current token and restart; until then no message or command reaches the bot.",
    );
    expect(h.adapter.ready()).toBe(false);
  });
});
