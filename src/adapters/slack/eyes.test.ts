import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LogLevel } from "@slack/web-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SlackEmulator, waitFor } from "../../../test/emulators/slack/index.js";
import { openStore, type Store } from "../../store/index.js";
import { createState, type StateStore } from "../../store/state.js";
import { ReportingWebClient } from "./app.js";
import { Eyes } from "./eyes.js";

let emu: SlackEmulator;
let dir: string;
const stores: Store[] = [];

beforeEach(async () => {
  // One :eyes: removal per minute: the second waits for a Retry-After longer than a close.
  emu = await SlackEmulator.start({ rateLimits: { perMinute: { "reactions.remove": 1 } } });
  dir = mkdtempSync(join(tmpdir(), "sb-eyes-"));
});
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  await emu.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A process's :eyes: on the shared store, writing through its own scheduler as the app does. */
async function processEyes(sweepMs = 50): Promise<{ eyes: Eyes; state: StateStore }> {
  const store = await openStore(`sqlite://${join(dir, "store.sqlite")}`);
  stores.push(store);
  const state = createState(store);
  const writes = new ReportingWebClient(emu.botToken, {
    slackApiUrl: emu.apiUrl,
    logLevel: LogLevel.ERROR,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
  });
  return { eyes: new Eyes({ writes, scheduler: writes.scheduler, state, sweepMs }), state };
}

const question = (text: string) => emu.state.addMessage({ channel: "C1", user: "U_ALICE", text });

describe("the :eyes: on a message the bot took", () => {
  it("one a closing process could not take away (a 429 outlasting its close) is taken away by a live one", async () => {
    const first = await processEyes();
    first.eyes.start("T1");
    const [a, b] = [question("one"), question("two")];
    await first.eyes.add("C1", a.ts);
    await first.eyes.add("C1", b.ts);
    await first.eyes.remove(`C1:${a.ts}`);
    expect(a.reactions.has("eyes")).toBe(false);
    // Its removal meets the 429 and waits for its Retry-After; the process closes meanwhile.
    void first.eyes.remove(`C1:${b.ts}`);
    await waitFor(() => emu.rates.limited.some((l) => l.method === "reactions.remove"));
    await first.eyes.close(100);
    expect(b.reactions.has("eyes")).toBe(true);

    // A fresh minute for the workspace, and a live process sweeps what was left.
    emu.rates.reset();
    const second = await processEyes();
    second.eyes.start("T1");
    await waitFor(() => !b.reactions.has("eyes"));
    await waitFor(async () => (await second.state.listMembers("slack:eyes-left:T1")).length === 0);
    await second.eyes.close();
  });

  it("a left :eyes: already gone is dropped from the list, and another workspace's is not touched", async () => {
    const first = await processEyes();
    first.eyes.start("T1");
    const m = question("answered");
    await first.state.listAdd("slack:eyes-left:T1", `${Date.now()}|C1:${m.ts}`);
    await first.state.listAdd("slack:eyes-left:T_OTHER", `${Date.now()}|C9:1.000001`);
    await waitFor(async () => (await first.state.listMembers("slack:eyes-left:T1")).length === 0);
    expect(await first.state.listMembers("slack:eyes-left:T_OTHER")).toHaveLength(1);
    await first.eyes.close();
  });
});
