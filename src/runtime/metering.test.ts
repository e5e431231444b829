import { describe, expect, it } from "vitest";
import type { ModelEvent, ModelRequest, Provider } from "../agent/providers/provider.js";
import { tapProvider } from "../agent/providers/tap.js";
import type { UsageEntry, UsageLedger } from "../store/usage.js";
import { Meter } from "./metering.js";

const payer = { platform: "slack" as const, user: "U1", channel: "C1", key: "slack:T1:C1:1.0" };
const request: ModelRequest = { model: "gpt-4o-mini", system: "", messages: [], tools: [] };

/** A ledger whose writes land only when the test lets them. */
function slowLedger() {
  const written: Array<Omit<UsageEntry, "id" | "at">> = [];
  let land!: () => void;
  const landed = new Promise<void>((r) => {
    land = r;
  });
  const ledger = {
    async record(call: Omit<UsageEntry, "id" | "at">) {
      await landed;
      written.push(call);
    },
  } as unknown as UsageLedger;
  return { ledger, written, land };
}

const answering: Provider = {
  name: "openai",
  listModels: async () => [],
  async *stream(): AsyncIterable<ModelEvent> {
    yield { type: "text", delta: "Hello" };
    yield { type: "usage", usage: { inputTokens: 12, outputTokens: 3 } };
    yield { type: "stop", reason: "end" };
  },
};

describe("Meter", () => {
  it("lets the answer end before its usage is written, and its work ends only after", async () => {
    const { ledger, written, land } = slowLedger();
    const meter = new Meter();
    meter.keepIn(ledger);
    const provider = tapProvider(answering, meter.tap);
    const seen: string[] = [];
    let workEnded = false;
    const work = meter
      .within(payer, async () => {
        for await (const event of provider.stream(request, new AbortController().signal))
          seen.push(event.type);
      })
      .then(() => {
        workEnded = true;
      });
    await new Promise((r) => setTimeout(r, 20));
    // The stop came although the record had not landed; the work waits for it.
    expect(seen).toEqual(["text", "usage", "stop"]);
    expect(written).toEqual([]);
    expect(workEnded).toBe(false);
    land();
    await work;
    expect(written).toEqual([
      expect.objectContaining({ ...payer, model: "gpt-4o-mini", inputTokens: 12, outputTokens: 3 }),
    ]);
  });

  it("sums what each piece of work's calls used, apart from any other's, with the cost of the priced ones", async () => {
    const meter = new Meter({ "house-model": { input: 1, output: 2 } });
    const provider = tapProvider(answering, meter.tap);
    const ask = async (model: string) => {
      for await (const _ of provider.stream({ ...request, model }, new AbortController().signal)) {
        // drained
      }
    };
    const [mine, theirs] = await Promise.all([
      meter.within(payer, async () => {
        await ask("gpt-4o-mini");
        await ask("house-model");
        await ask("unknown-model");
        return { ...meter.spent()! };
      }),
      meter.within({ ...payer, user: "U2" }, async () => {
        await ask("house-model");
        return { ...meter.spent()! };
      }),
    ]);
    // gpt-4o-mini at the default table's $0.15 / $0.60, house-model at $1 / $2 per million tokens.
    expect(mine).toMatchObject({ calls: 3, inputTokens: 36, outputTokens: 9, unpriced: 1 });
    expect(mine.cost).toBeCloseTo((12 * 0.15 + 3 * 0.6 + 12 * 1 + 3 * 2) / 1e6, 15);
    expect(theirs).toEqual({ calls: 1, inputTokens: 12, outputTokens: 3, cost: (12 + 6) / 1e6, unpriced: 0 });
    expect(meter.spent()).toBeUndefined();
  });

  it("tells the listener at once, also for a call no one pays for", async () => {
    const told: Array<[string, number]> = [];
    const meter = new Meter({}, (model, usage) => told.push([model, usage.inputTokens]));
    for await (const _ of tapProvider(answering, meter.tap).stream(request, new AbortController().signal)) {
      // drained
    }
    expect(told).toEqual([["gpt-4o-mini", 12]]);
  });
});
