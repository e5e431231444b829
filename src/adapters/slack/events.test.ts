import { afterEach, describe, expect, it } from "vitest";
import { ScriptedRunner } from "../../../test/emulators/slack/adapter-harness.js";
import { BOT_ID, BOT_USER_ID, SlackEmulator, TEAM_ID, waitFor } from "../../../test/emulators/slack/index.js";
import { adapterState } from "../../../test/support/adapter-state.js";
import { blockFor, TurnCounter } from "../../../test/support/event-loop.js";
import { configSchema } from "../../config.js";
import type { Inbound } from "../../runtime/contract.js";
import { ReportingWebClient } from "./app.js";
import { SlackEvents, threadKey } from "./events.js";
import { EYES_CLOSE_MS, Eyes } from "./eyes.js";

let emu: SlackEmulator | undefined;
afterEach(async () => {
  await emu?.stop();
  emu = undefined;
});

/** The adapter's event handling on the emulator, with its state on a SQLite file of its own. */
async function slackEvents(
  on: SlackEmulator,
  runner: ScriptedRunner,
  web: ReportingWebClient,
  eyes = new Eyes({ writes: web, scheduler: web.scheduler }),
): Promise<SlackEvents> {
  return new SlackEvents({
    runner,
    config: configSchema.parse({}),
    token: on.botToken,
    identity: () => ({ teamId: TEAM_ID, botUserId: BOT_USER_ID, botId: BOT_ID }),
    writes: web,
    reads: web,
    scheduler: web.scheduler,
    eyes,
    state: (await adapterState()).state,
  });
}

/** Alice's "hello" in C1, as a new thread's first message, handled by `events`. */
function aliceSaysHello(on: SlackEmulator, events: SlackEvents, eventId: string) {
  const m = on.state.addMessage({ channel: "C1", user: "U_ALICE", text: "hello" });
  const turn = events.turn({
    eventId,
    team: TEAM_ID,
    key: threadKey(TEAM_ID, "C1", m.ts),
    channel: "C1",
    ts: m.ts,
    threadRoot: m.ts,
    author: "U_ALICE",
    text: "hello",
    withHistory: false,
  });
  return { m, turn };
}

describe("Slack events: the :eyes: acknowledgement", () => {
  it("waits out a rate-limited :eyes: removal until the adapter closes, then for a second at most", async () => {
    // No reactions.remove allowed this minute: Slack answers 429 with Retry-After 60.
    emu = await SlackEmulator.start({ rateLimits: { perMinute: { "reactions.remove": 0 } } });
    const web = new ReportingWebClient(emu.botToken, {
      slackApiUrl: emu.apiUrl,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
    });
    const runner = new ScriptedRunner();
    runner.script = async () => undefined;
    const eyes = new Eyes({ writes: web, scheduler: web.scheduler });
    const events = await slackEvents(emu, runner, web, eyes);
    const { turn } = aliceSaysHello(emu, events, "Ev1");
    await waitFor(() => emu?.api.calls.some((c) => c.method === "reactions.remove"));
    // The turn is over without it: a drain never waits for the :eyes:.
    await turn;
    const closing = Date.now();
    await eyes.close(EYES_CLOSE_MS);
    const closed = Date.now() - closing;
    expect(closed).toBeGreaterThanOrEqual(EYES_CLOSE_MS - 50);
    expect(closed).toBeLessThan(EYES_CLOSE_MS + 1_000);
    expect(emu.api.calls.filter((c) => c.method === "reactions.remove")).toHaveLength(1);
  });

  it("takes away after the answer an :eyes: of the bot's already on the message (left by a process killed before it stored it)", async () => {
    emu = await SlackEmulator.start();
    const web = new ReportingWebClient(emu.botToken, {
      slackApiUrl: emu.apiUrl,
      retryConfig: { retries: 0 },
    });
    const runner = new ScriptedRunner();
    runner.script = async () => undefined;
    const events = await slackEvents(emu, runner, web);
    const { m, turn } = aliceSaysHello(emu, events, "Ev0");
    // Before the turn's reactions.add reaches Slack: the dead process's :eyes: is there.
    m.reactions.set("eyes", new Set([BOT_USER_ID]));
    await turn;
    await waitFor(() => emu?.api.calls.some((c) => c.method === "reactions.add"));
    expect(emu.api.calls.find((c) => c.method === "reactions.add")?.error).toBe("already_reacted");
    await waitFor(() => !m.reactions.has("eyes"));
    expect(emu.api.calls.filter((c) => c.method === "reactions.remove").map((c) => c.ok)).toEqual([true]);
  });
});

describe("Slack events: the :eyes: of a message another process answers", () => {
  it("is left on the message for that process to take away, with the message's mark", async () => {
    emu = await SlackEmulator.start();
    const web = new ReportingWebClient(emu.botToken, {
      slackApiUrl: emu.apiUrl,
      retryConfig: { retries: 0 },
    });
    const runner = new ScriptedRunner();
    // A stopping process hands the message over instead of answering it.
    runner.script = async (inbound) => inbound.reply.leftToOthers?.();
    const events = await slackEvents(emu, runner, web);
    const { m, turn } = aliceSaysHello(emu, events, "Ev2");
    await turn;
    await waitFor(() => m.reactions.has("eyes"));
    await new Promise((r) => setTimeout(r, 200));
    expect(emu.api.calls.filter((c) => c.method === "reactions.remove")).toEqual([]);
    expect(runner.inbounds[0]?.mark).toBe(`C1:${m.ts}`);
    // The process that answers it takes it away (Adapter.unmark).
    await new Eyes({ writes: web, scheduler: web.scheduler }).remove(`C1:${m.ts}`);
    expect(m.reactions.has("eyes")).toBe(false);
  });
});

describe("Slack events: a stopping adapter", () => {
  it("waits for a follow-up still being looked up before it says all is handed over", async () => {
    emu = await SlackEmulator.start();
    const web = new ReportingWebClient(emu.botToken, {
      slackApiUrl: emu.apiUrl,
      retryConfig: { retries: 0 },
    });
    // Whether the bot knows the thread takes a store read; under load it takes a while.
    const runner = new (class extends ScriptedRunner {
      override async knows(): Promise<boolean> {
        await new Promise((r) => setTimeout(r, 150));
        return true;
      }
    })();
    runner.script = async () => undefined;
    const events = await slackEvents(emu, runner, web);
    const root = emu.state.addMessage({ channel: "C1", user: "U_ALICE", text: "hello" });
    const m = emu.state.addMessage({ channel: "C1", user: "U_ALICE", text: "and then?", thread_ts: root.ts });
    const delivered = events.onMessage(
      { type: "message", channel: "C1", user: "U_ALICE", text: "and then?", ts: m.ts, thread_ts: root.ts },
      "EvFollow",
    );
    await events.handedOver();
    expect(runner.inbounds.map((i) => i.text)).toEqual(["and then?"]);
    await delivered;
  });
});

describe("Slack events: a burst of messages", () => {
  it("hands them to the runner in the order they came, the event loop turning in between", async () => {
    emu = await SlackEmulator.start();
    const web = new ReportingWebClient(emu.botToken, {
      slackApiUrl: emu.apiUrl,
      retryConfig: { retries: 0 },
    });
    let turns: TurnCounter | undefined;
    const runner = new (class extends ScriptedRunner {
      readonly ticksAt: number[] = [];
      override handle(inbound: Inbound): Promise<void> {
        this.ticksAt.push(turns?.count ?? 0);
        // A message's intake under load (the store's queries, the lock, the turn's record) before its first I/O.
        blockFor(2);
        return super.handle(inbound);
      }
    })();
    runner.script = async () => undefined;
    const events = await slackEvents(emu, runner, web);
    const mention = (i: number) => {
      const text = `<@${BOT_USER_ID}> question ${i}`;
      const m = emu!.state.addMessage({ channel: `C${i}`, user: "U_ALICE", text });
      return events.onMessage(
        { type: "app_mention", channel: `C${i}`, user: "U_ALICE", text, ts: m.ts },
        `Ev${i}`,
      );
    };
    // The asker's name is looked up once; the burst then runs on the store alone, as under load.
    emu.state.user("U_ALICE");
    await mention(0);
    expect(runner.inbounds[0]?.user.name).toBe("alice");
    turns = new TurnCounter();
    await Promise.all(Array.from({ length: 30 }, (_, i) => mention(i + 1)));
    turns.stop();
    expect(runner.inbounds.map((i) => i.text)).toEqual(Array.from({ length: 31 }, (_, i) => `question ${i}`));
    // Handed over all in one turn of the loop, no timer would have run before the last one.
    expect(runner.ticksAt.at(-1)! - runner.ticksAt[1]!).toBeGreaterThanOrEqual(5);
  });
});
