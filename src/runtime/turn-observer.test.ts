import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ScriptedProvider, say } from "../../test/support/scripted.js";
import { log } from "../log.js";
import { UsageLedger } from "../store/usage.js";
import { ALICE, aliceSays, fakeSlack, KEY, TakeoverBed } from "./takeover.test-helper.js";
import type { TurnObserver } from "./turn-log.js";

/** What a metrics observer was told, in order. */
function recording() {
  const said: string[] = [];
  const observer: TurnObserver = {
    turnStarted: (inbound) => void said.push(`started ${inbound.id}`),
    turnEnded: (inbound, outcome) => void said.push(`ended ${inbound.id} ${outcome}`),
  };
  return { said, observer };
}

describe("what a turn tells the metrics observer", () => {
  let bed: TakeoverBed;

  beforeEach(async () => {
    bed = await TakeoverBed.open();
  });

  afterEach(async () => {
    vi.restoreAllMocks();
    await bed.close();
  });

  it("counts a message over its daily budget as no turn at all", async () => {
    const { said, observer } = recording();
    const provider = new ScriptedProvider([say("never")]);
    const { dispatcher } = bed.setup(provider, {
      usage: { budgets: { perUser: { tokens: 100 } } },
      observer,
    });
    await new UsageLedger(bed.store).record({
      platform: "slack",
      user: ALICE.id,
      channel: "C1",
      key: KEY,
      model: "gpt-4o",
      inputTokens: 150,
      outputTokens: 0,
      cost: 0,
    });
    const refused = fakeSlack();

    await dispatcher.handle(aliceSays("e1", "a question", refused.reply));

    expect(provider.requests).toHaveLength(0);
    expect(refused.seen.join("")).toMatch(/daily budget/);
    expect(said).toEqual([]);
  });

  it("ends a turn that threw before it was answered as an error", async () => {
    const { said, observer } = recording();
    const provider = new ScriptedProvider([say("never")]);
    const { dispatcher } = bed.setup(provider, { observer });
    vi.spyOn(bed.ledger, "get").mockRejectedValue(new Error("the store went away"));
    vi.spyOn(log, "warn").mockReturnValue(undefined);
    vi.spyOn(log, "error").mockReturnValue(undefined);

    await dispatcher.handle(aliceSays("e1", "a question", fakeSlack().reply));

    expect(provider.requests).toHaveLength(0);
    expect(said).toEqual(["started e1", "ended e1 error"]);
  });
});
