import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { configSchema } from "../config.js";
import { log } from "../log.js";
import { openStore, type Store } from "../store/index.js";
import { UsageLedger } from "../store/usage.js";
import { Budgets, untilText, warnOfUnpricedModels } from "./budgets.js";
import { Meter } from "./metering.js";

describe("daily budgets", () => {
  let dir: string;
  let store: Store;
  let ledger: UsageLedger;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "sb-budgets-"));
    store = await openStore(`sqlite://${join(dir, "s.sqlite")}`);
    ledger = new UsageLedger(store);
  });
  afterEach(async () => {
    await store.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  const noon = Date.UTC(2026, 10, 25, 12, 30);
  const payer = { platform: "discord" as const, user: "U1", channel: "C1", key: "discord:G1:C1" };
  const spend = (inputTokens: number, cost: number, at = noon) =>
    ledger.record({ ...payer, model: "gpt-4o", inputTokens, outputTokens: 0, cost }, at);
  const budgets = (usage: unknown) => new Budgets(configSchema.parse({ usage }), ledger);

  it("refuses a person over their cap with the cap, the use and when it resets", async () => {
    await spend(900, 0.1);
    const b = budgets({ budgets: { perUser: { tokens: 1_000 } } });
    expect(await b.refusal(payer, noon)).toBeUndefined();
    await spend(100, 0.1);
    expect(await b.refusal(payer, noon)).toBe(
      "You have used your daily budget of 1,000 tokens (1,000 tokens used), so I will not ask the model for now. It resets at 00:00 UTC, in 11 h 30 min.",
    );
    // A new day starts from nothing.
    expect(await b.refusal(payer, Date.UTC(2026, 10, 26, 0, 1))).toBeUndefined();
    // Someone else is not held to it, nor is the terminal.
    expect(await b.refusal({ ...payer, user: "U2" }, noon)).toBeUndefined();
    expect(await b.refusal({ ...payer, platform: "console" }, noon)).toBeUndefined();
  });

  it("refuses everyone in a channel over its cost cap, and tells who can raise it", async () => {
    await spend(10, 2.5);
    const b = budgets({ budgets: { perChannel: { cost: 2 } } });
    expect(await b.refusal({ ...payer, user: "U9" }, noon)).toMatch(
      /^This channel has used its daily budget of \$2\.00 \(\$2\.50 used\).*An admin can raise usage\.budgets\.perChannel in the config\.$/,
    );
  });

  it("says how many calls a cost cap left out for want of a price", async () => {
    await spend(10, 2.5);
    await ledger.record({ ...payer, model: "llama-3.3-70b", inputTokens: 5_000, outputTokens: 0 }, noon);
    const b = budgets({ budgets: { perUser: { cost: 2 } } });
    expect(await b.refusal(payer, noon)).toMatch(
      /^You have used your daily budget of \$2\.00 \(\$2\.50 used; 1 call to a model without a price is not in it\)/,
    );
  });

  it("warns at start-up of the models a cost cap cannot see, and only when one is set", () => {
    const warn = vi.spyOn(log, "warn").mockImplementation(() => undefined);
    try {
      const meter = new Meter();
      const price = (model: string) => meter.price(model);
      const models = { allowed: ["openai/gpt-4o", "llama-3.3-70b"], title: "gpt-4o-mini" };
      const capped = configSchema.parse({
        llm: { model: "my-local-model" },
        models,
        usage: { budgets: { perChannel: { cost: 5 } } },
      });
      expect(warnOfUnpricedModels(capped, price)).toEqual(["my-local-model", "llama-3.3-70b"]);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn.mock.calls[0]).toEqual([
        { models: ["my-local-model", "llama-3.3-70b"] },
        expect.stringContaining("have no price"),
      ]);
      const tokensOnly = configSchema.parse({ models, usage: { budgets: { perUser: { tokens: 5 } } } });
      expect(warnOfUnpricedModels(tokensOnly, price)).toEqual([]);
      expect(warn).toHaveBeenCalledTimes(1);
    } finally {
      warn.mockRestore();
    }
  });

  it("reads nothing when no budget is set, and lets the turn go on when the store fails", async () => {
    expect(budgets({}).enabled).toBe(false);
    const b = budgets({ budgets: { perUser: { tokens: 1 } } });
    await store.close();
    expect(await b.refusal(payer, noon)).toBeUndefined();
  });

  it("refuses a budget with neither tokens nor cost", () => {
    expect(() => configSchema.parse({ usage: { budgets: { perUser: {} } } })).toThrow(/tokens, cost or both/);
  });

  it("says how long until the reset in words", () => {
    expect(untilText(30_000)).toBe("under a minute");
    expect(untilText(12 * 60_000)).toBe("12 min");
    expect(untilText(3 * 3_600_000 + 5 * 60_000)).toBe("3 h 5 min");
  });
});
