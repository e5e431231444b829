import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { configSchema } from "../config.js";
import { openStore, type Store } from "../store/index.js";
import { UsageLedger } from "../store/usage.js";
import { ownUsage, totalsText } from "./usage-report.js";

describe("a person's usage report", () => {
  let dir: string;
  let store: Store;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "sb-usage-report-"));
    store = await openStore(`sqlite://${join(dir, "s.sqlite")}`);
  });
  afterEach(async () => {
    await store.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it("says no model calls when there were none, not that their price is unknown", () => {
    expect(totalsText({ calls: 0, inputTokens: 0, outputTokens: 0, cost: 0, unpriced: 0 })).toBe(
      "no model calls",
    );
    expect(totalsText({ calls: 2, inputTokens: 10, outputTokens: 5, cost: 0, unpriced: 2 })).toBe(
      "2 model calls, 15 tokens (10 in, 5 out), no price known",
    );
  });

  it("says which calls a cost budget leaves out for want of a price, and which calls' tokens are estimated", async () => {
    const config = configSchema.parse({ usage: { budgets: { perUser: { cost: 1 } } } });
    const ledger = new UsageLedger(store);
    const who = { platform: "slack" as const, user: "U1", key: "slack:T1:C1:1.1" as const };
    const call = { platform: "slack" as const, user: "U1", channel: "C1", key: who.key, outputTokens: 10 };
    await ledger.record({ ...call, model: "llama-3.3-70b", inputTokens: 1_000_000 });
    await ledger.record({ ...call, model: "llama-3.3-70b", inputTokens: 1_000_000 });
    await ledger.record({ ...call, model: "gpt-4o", inputTokens: 100, cost: 0.25, estimated: true });
    const report = await ownUsage(ledger, config, who);
    expect(report).toContain(
      "Your usage today (UTC): 3 model calls, 2,000,130 tokens (2,000,100 in, 30 out), $0.2500, 2 without a price, 1 call estimated (stopped before the provider counted its tokens).",
    );
    expect(report).toContain(
      "Your daily budget: $1.00, $0.7500 left (2 calls to models without a price are not in it).",
    );
  });

  it("shows the daily budget where it applies, and not in the terminal, which has none", async () => {
    const config = configSchema.parse({ usage: { budgets: { perUser: { tokens: 1_000 } } } });
    const ledger = new UsageLedger(store);
    const chat = await ownUsage(ledger, config, { platform: "slack", user: "U1", key: "slack:T1:C1:1.1" });
    expect(chat).toContain("Your usage today (UTC): no model calls.");
    expect(chat).toContain("Your daily budget:");
    const terminal = await ownUsage(ledger, config, { platform: "console", user: "me", key: "console:1" });
    expect(terminal).not.toContain("daily budget");
  });
});
