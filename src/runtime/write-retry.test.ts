import { describe, expect, it } from "vitest";
import { faultOf, WriteRetries } from "./write-retry.js";

/** Errors shaped as Slack's WebClient and discord.js throw them. */
const slack = (error: string) => Object.assign(new Error(error), { data: { ok: false, error } });
const discord = (code: number, status: number) => Object.assign(new Error("Discord"), { code, status });
const http = (status: number) => Object.assign(new Error(`HTTP ${status}`), { status });

describe("faultOf", () => {
  it("tells a refusal of the place, another refusal, and an outage apart, also when wrapped", () => {
    expect(faultOf(slack("not_in_channel"))).toBe("refused");
    expect(faultOf(slack("is_archived"))).toBe("refused");
    expect(faultOf(discord(50013, 403))).toBe("refused");
    expect(faultOf(discord(10003, 404))).toBe("refused");
    expect(faultOf(new Error("wrapped", { cause: slack("channel_not_found") }))).toBe("refused");
    expect(faultOf(slack("invalid_blocks"))).toBe("answered");
    expect(faultOf(discord(50035, 400))).toBe("answered");
    expect(faultOf(slack("internal_error"))).toBe("transient");
    expect(faultOf(http(503))).toBe("transient");
    expect(faultOf(Object.assign(new Error("x"), { code: "slack_webapi_http_error", statusCode: 502 }))).toBe(
      "transient",
    );
    expect(faultOf(Object.assign(new Error("The operation was aborted"), { name: "AbortError" }))).toBe(
      "transient",
    );
    expect(faultOf(new Error("read ECONNRESET"))).toBe("transient");
  });
});

describe("WriteRetries", () => {
  it("backs off 1, 2, 4, 8 then 10 s an outage, giving up past a minute, and starts over after a success", () => {
    const retries = new WriteRetries();
    const waits: number[] = [];
    for (let now = 0; retries.failed(http(503), false, now); ) {
      const wait = (retries as unknown as { at: number }).at - now;
      waits.push(wait);
      now += wait;
    }
    expect(waits).toEqual([1, 2, 4, 8, 10, 10, 10, 10].map((s) => s * 1000));
    expect(retries.mayRepeat(undefined)).toBe(false);
    retries.reset();
    expect(retries.failed(http(503), false, 100_000)).toBe(true);
  });

  it("gives up at once on a refusal, or on a post that may have landed with no key to ask by", () => {
    expect(new WriteRetries().failed(slack("not_in_channel"), false)).toBe(false);
    const blind = new WriteRetries();
    const error = http(503);
    expect(blind.failed(error, true)).toBe(false);
    expect(blind.mayRepeat(error)).toBe(false);
  });

  it("tries another 4xx three times, and lets only an outage be tried again later", () => {
    const retries = new WriteRetries();
    const error = slack("invalid_blocks");
    expect([1, 2, 3].map((n) => retries.failed(error, false, n))).toEqual([true, true, false]);
    expect(retries.mayRepeat(error)).toBe(false);
    const outage = new WriteRetries();
    const down = http(500);
    let now = 0;
    while (outage.failed(down, false, now)) now += 10_000;
    expect(outage.mayRepeat(down)).toBe(true);
  });
});
