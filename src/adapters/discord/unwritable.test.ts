import { DiscordAPIError } from "discord.js";
import { describe, expect, it } from "vitest";
import { firstTellingIn, isRefusal, unwritableSentence } from "./unwritable.js";

const refused = (code: number, message: string) =>
  new DiscordAPIError({ code, message }, code, 403, "POST", "/channels/1/messages", { files: [] });

describe("why the bot could not answer, as the asker reads it", () => {
  it("names the channel and what an admin can do, by Discord's error code", () => {
    expect(unwritableSentence(refused(50001, "Missing Access"), "42")).toBe(
      "I could not answer in <#42>: I cannot see it. Ask a server admin to give me View Channel there, then ask again.",
    );
    expect(unwritableSentence(refused(50083, "Thread is archived"), "42")).toMatch(/archived or locked/);
    expect(unwritableSentence(refused(160005, "Thread is locked"), "42")).toMatch(/archived or locked/);
  });

  it("finds the code under the writer's wrapping, and says something useful without one", () => {
    const wrapped = new Error("write failed", { cause: refused(50013, "Missing Permissions") });
    expect(unwritableSentence(wrapped, "42")).toMatch(
      /^I could not answer in <#42>: I am missing a permission/,
    );
    expect(unwritableSentence(new Error("socket hang up"), undefined)).toBe(
      "I could not answer in that conversation: Discord refused my messages there. Please ask again later.",
    );
  });
});

describe("when the asker is told", () => {
  it("only for Discord's refusals, not for an outage that outlasted the retries", () => {
    expect(isRefusal(refused(50013, "Missing Permissions"))).toBe(true);
    expect(isRefusal(new Error("x", { cause: refused(160005, "Thread is locked") }))).toBe(true);
    expect(
      isRefusal(new DiscordAPIError({ code: 0, message: "Bad Gateway" }, 0, 502, "POST", "/", { files: [] })),
    ).toBe(false);
    expect(isRefusal(new Error("socket hang up"))).toBe(false);
  });

  it("once an hour per person and place", () => {
    const t = Date.UTC(2026, 10, 29, 12);
    expect(firstTellingIn("T1", "U1", t)).toBe(true);
    expect(firstTellingIn("T1", "U1", t + 60_000)).toBe(false);
    expect(firstTellingIn("T1", "U2", t + 60_000)).toBe(true);
    expect(firstTellingIn("T2", "U1", t + 60_000)).toBe(true);
    expect(firstTellingIn("T1", "U1", t + 3_600_000)).toBe(true);
  });
});
