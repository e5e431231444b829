import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Reply, TextSink } from "./contract.js";
import { ReplyRenderer } from "./render.js";
import { FakeChannel } from "./stream.fake.js";
import { StreamWriter } from "./stream.js";
import { postKeys } from "./write-keys.js";

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

async function settle(done: Promise<void>): Promise<unknown> {
  const outcome = done.then(
    () => null,
    (error: unknown) => error,
  );
  await vi.runAllTimersAsync();
  return outcome;
}

/** Errors as the platforms' clients throw them (see write-retry.ts). */
const slackHttp = (statusCode: number) =>
  Object.assign(new Error(`An HTTP protocol error occurred: statusCode = ${statusCode}`), {
    code: "slack_webapi_http_error",
    statusCode,
  });
const slackPlatform = (error: string) =>
  Object.assign(new Error(`An API error occurred: ${error}`), {
    code: "slack_webapi_platform_error",
    data: { ok: false, error },
  });
const discordApi = (code: number, status: number) =>
  Object.assign(new Error("Missing Permissions"), { code, status, name: `DiscordAPIError[${code}]` });

/** A channel whose edits fail while `down()` says the platform is down. */
function flaky(error: () => Error, opts: ConstructorParameters<typeof FakeChannel>[0] = {}) {
  let downUntil = 0;
  const channel = new FakeChannel({
    latencyMs: 50,
    failEdit: () => (Date.now() < downUntil ? error() : null),
    failPost: (n) => (n > 1 && Date.now() < downUntil ? error() : null),
    ...opts,
  });
  return { channel, down: (ms: number) => (downUntil = Date.now() + ms) };
}

/** Streams ten sentences over seven seconds. */
async function sentences(writer: StreamWriter): Promise<string> {
  let text = "";
  for (let i = 0; i < 10; i++) {
    writer.write(`sentence ${i}. `);
    text += `sentence ${i}. `;
    await vi.advanceTimersByTimeAsync(700);
  }
  return text;
}

describe("StreamWriter in a platform outage", () => {
  it("rides out a four-second outage mid-answer and shows the whole answer", async () => {
    for (const error of [() => new Error("HTTP 503"), () => slackHttp(503)]) {
      const { channel, down } = flaky(error);
      const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 1000 });
      writer.write("First half of the answer. ");
      await vi.advanceTimersByTimeAsync(1500);
      down(4_000);
      const rest = await sentences(writer);
      expect(await settle(writer.finish())).toBeNull();
      expect(writer.broken()).toBeUndefined();
      expect(channel.texts()).toEqual([`First half of the answer. ${rest}`]);
      expect(channel.callsOf("edit").some((c) => !c.ok)).toBe(true);
    }
  });

  it("gives up at once where the platform refuses the bot the place, and never tries again", async () => {
    for (const refusal of [slackPlatform("not_in_channel"), discordApi(50013, 403)]) {
      const { channel, down } = flaky(() => refusal);
      const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 1000 });
      writer.write("First half of the answer. ");
      await vi.advanceTimersByTimeAsync(1500);
      down(600_000);
      writer.write("and the rest.");
      await vi.advanceTimersByTimeAsync(1500);
      expect(writer.broken()).toBe(refusal);
      expect(await settle(writer.fail("Sorry."))).toBe(refusal);
      expect(channel.callsOf("edit").filter((c) => !c.ok)).toHaveLength(1);
    }
  });

  it("tries a write the platform answered with another 4xx three times", async () => {
    const { channel, down } = flaky(() => slackPlatform("invalid_blocks"));
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100 });
    writer.write("First. ");
    await vi.advanceTimersByTimeAsync(500);
    down(600_000);
    writer.write("Second.");
    expect(String(await settle(writer.finish()))).toContain("invalid_blocks");
    expect(channel.callsOf("edit").filter((c) => !c.ok)).toHaveLength(3);
  });

  it("after an outage longer than its budget, ends the answer with the failure's sentence once the platform is back", async () => {
    const { channel, down } = flaky(() => slackHttp(502));
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 1000 });
    writer.write("First half of the answer. ");
    await vi.advanceTimersByTimeAsync(1500);
    down(70_000);
    const rest = await sentences(writer);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(String(writer.broken())).toContain("statusCode = 502");
    await vi.advanceTimersByTimeAsync(10_000);
    expect(await settle(writer.fail("I could not finish writing this answer."))).toBeNull();
    expect(channel.texts()).toEqual([
      `First half of the answer. ${rest}\n\nI could not finish writing this answer.`,
    ]);
    expect(writer.broken()).toBeUndefined();
  });

  it("tries once more only: a second outage leaves the reply as it is", async () => {
    const { channel, down } = flaky(() => slackHttp(503));
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100 });
    writer.write("First. ");
    await vi.advanceTimersByTimeAsync(500);
    down(600_000);
    writer.write("Second.");
    expect(String(await settle(writer.finish()))).toContain("503");
    const before = channel.callsOf("edit").length;
    const again = await settle(writer.fail("Sorry."));
    expect(String(again)).toContain("503");
    const tries = channel.callsOf("edit").length;
    expect(tries).toBeGreaterThan(before);
    expect(await settle(writer.fail("Sorry."))).toBe(again);
    expect(channel.callsOf("edit")).toHaveLength(tries);
    expect(channel.texts()).toEqual(["First. "]);
  });

  it("posts a continuation that failed in an outage once, found by its key", async () => {
    // The post lands but its answer is lost, then the platform is down past the budget.
    let downUntil = 0;
    const channel = new FakeChannel({
      keyed: "find",
      lostAnswer: (n) => n === 2,
      failPost: (n) => (n > 2 && Date.now() < downUntil ? slackHttp(503) : null),
    });
    const find = channel.find!;
    channel.find = (key) => (Date.now() < downUntil ? Promise.reject(slackHttp(503)) : find(key));
    const writer = new StreamWriter(channel, { limit: 30, intervalMs: 100, keys: postKeys("turn-1") });
    writer.write("The first message, it fills. ");
    await vi.advanceTimersByTimeAsync(500);
    downUntil = Date.now() + 70_000;
    writer.write("And the second one.");
    expect(String(await settle(writer.finish()))).toContain("503");
    expect(await settle(writer.fail("Sorry."))).toBeNull();
    expect(channel.texts()).toEqual(["The first message, it fills. ", "And the second one.\n\nSorry."]);
  });

  it("lets go at once when abandoned while it waits to try again", async () => {
    const { channel, down } = flaky(() => slackHttp(503));
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100 });
    writer.write("First. ");
    await vi.advanceTimersByTimeAsync(500);
    down(600_000);
    writer.write("Second.");
    await vi.advanceTimersByTimeAsync(20_000);
    const start = Date.now();
    const abandoned = writer.abandon();
    await vi.advanceTimersByTimeAsync(100);
    await abandoned;
    expect(Date.now() - start).toBeLessThanOrEqual(100);
  });
});

describe("ReplyRenderer after an answer's end failed in an outage", () => {
  it("ends the answer with the turn's failure sentence instead of leaving it mid-sentence", async () => {
    const { channel, down } = flaky(() => slackHttp(503));
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100 });
    const reply = { stream: (): TextSink => writer, status: async () => {} } as unknown as Reply;
    const renderer = new ReplyRenderer(
      reply,
      () => {},
      () => undefined,
    );
    await renderer.render({ type: "text", delta: "The answer begins" });
    await vi.advanceTimersByTimeAsync(500);
    await renderer.render({ type: "text", delta: ", and goes on." });
    down(70_000);
    const done = renderer.render({ type: "done" } as never);
    expect(String(await settle(done.then(() => undefined)))).toContain("503");
    await vi.advanceTimersByTimeAsync(10_000);
    const failed = renderer.fail("Something went wrong on my side while answering.");
    await vi.runAllTimersAsync();
    await failed;
    expect(channel.texts()).toEqual([
      "The answer begins, and goes on.\n\nSomething went wrong on my side while answering.",
    ]);
  });
});
