import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { emulatedProvider, useLlmEmulator } from "../agent/providers/emulator-setup.test-helper.js";
import type { ModelRequest, Provider } from "../agent/providers/provider.js";
import { tapProvider } from "../agent/providers/tap.js";
import { estimatedUsage } from "../agent/providers/usage-estimate.js";
import type { Usage } from "../core/messages.js";
import { openStore } from "../store/index.js";
import { UsageLedger } from "../store/usage.js";
import { Meter } from "./metering.js";

/*
 * A model call that does not finish (Stop pressed, the stream broken, the reader gone) is
 * still paid for: the real providers against the LLM emulator, counted by the Meter.
 */
const emulator = useLlmEmulator();
const PAYER = { platform: "slack" as const, user: "U1", channel: "C1", key: "slack:T:C1:1.1" };
const REQ: ModelRequest = {
  model: "m",
  system: "You answer briefly.",
  messages: [{ role: "user", content: "Tell me a long story about the sea." }],
  tools: [],
};
const LONG = "word ".repeat(200);
const REPORTED = { input: 50_000, output: 900, cached: 20_000 };

interface Counted {
  usage: Usage;
  cost: number | undefined;
}

function metered(kind: "openai" | "anthropic") {
  const counted: Counted[] = [];
  const meter = new Meter({ m: { input: 1, output: 1 } }, (_model, usage, cost) =>
    counted.push({ usage, cost }),
  );
  const provider = tapProvider(emulatedProvider(emulator(), kind, { apiKey: "sk-x" }), meter.tap);
  return { meter, provider, counted };
}

/** Reads the stream, stopped after its fifth text by `how` (aborted, left) or read whole; the spent totals after. */
async function read(
  meter: Meter,
  provider: Provider,
  how: "abort" | "break" | "whole" | "broken",
): Promise<{ spent: ReturnType<Meter["spent"]>; failed?: unknown; usageEvents: number }> {
  const ctl = new AbortController();
  let usageEvents = 0;
  let failed: unknown;
  const spent = await meter.within(PAYER, async () => {
    let texts = 0;
    try {
      for await (const e of provider.stream(REQ, ctl.signal)) {
        if (e.type === "usage") usageEvents += 1;
        if (e.type !== "text" || ++texts < 5) continue;
        if (how === "abort") ctl.abort(new Error("Stopped by U1."));
        if (how === "break") break;
      }
    } catch (err) {
      failed = err;
    }
    return { ...meter.spent()! };
  });
  return { spent, failed, usageEvents };
}

describe("a model call that does not finish", () => {
  it("anthropic: stopped mid-answer, is charged once, its input exactly as message_start said", async () => {
    const { meter, provider, counted } = metered("anthropic");
    const dir = mkdtempSync(join(tmpdir(), "sb-stopped-"));
    const store = await openStore(`sqlite://${join(dir, "s.sqlite")}`);
    const ledger = new UsageLedger(store);
    meter.keepIn(ledger);
    emulator().enqueue({ text: LONG, delayMs: 5, usage: REPORTED });
    const { spent, failed, usageEvents } = await read(meter, provider, "abort");
    const entries = await ledger.entries({ user: PAYER.user, platform: PAYER.platform });
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    expect(entries).toEqual([expect.objectContaining({ inputTokens: REPORTED.input, estimated: true })]);
    expect((failed as { code?: string }).code).toBe("llm_aborted");
    expect(counted).toHaveLength(1);
    expect(counted[0]!.usage.inputTokens).toBe(REPORTED.input);
    expect(counted[0]!.usage.cachedInputTokens).toBe(REPORTED.cached);
    expect(counted[0]!.usage.outputTokens).toBeGreaterThan(1);
    expect(spent).toMatchObject({ calls: 1, inputTokens: REPORTED.input, estimated: 1 });
    // The caller gets it too, before the error (the agent's own turn totals).
    expect(usageEvents).toBe(1);
  });

  it("openai: stopped mid-answer, is charged once, an estimate of the prompt and of what was streamed", async () => {
    const { meter, provider, counted } = metered("openai");
    emulator().enqueue({ text: LONG, delayMs: 5, usage: REPORTED });
    const { spent, failed } = await read(meter, provider, "abort");
    expect((failed as { code?: string }).code).toBe("llm_aborted");
    expect(counted).toHaveLength(1);
    const prompt = estimatedUsage(REQ, "").inputTokens;
    expect(prompt).toBeGreaterThan(0);
    expect(counted[0]!.usage.inputTokens).toBe(prompt);
    expect(counted[0]!.usage.outputTokens).toBeGreaterThan(0);
    expect(counted[0]!.cost).toBeGreaterThan(0);
    expect(spent).toMatchObject({ calls: 1, estimated: 1 });
  });

  for (const kind of ["anthropic", "openai"] as const) {
    it(`${kind}: is charged once when the stream breaks off after words were shown`, async () => {
      const { meter, provider, counted } = metered(kind);
      emulator().enqueue({ cut: { afterChars: 120, text: LONG } });
      const { spent, failed } = await read(meter, provider, "whole");
      expect((failed as { code?: string }).code).toBe("llm_unavailable");
      expect(counted).toHaveLength(1);
      expect(counted[0]!.usage.inputTokens).toBeGreaterThan(0);
      expect(spent).toMatchObject({ calls: 1, estimated: 1 });
    });

    it(`${kind}: is charged once, from what was streamed, when its reader stops reading`, async () => {
      const { meter, provider, counted } = metered(kind);
      emulator().enqueue({ text: LONG, delayMs: 5, usage: REPORTED });
      const { spent } = await read(meter, provider, "break");
      expect(counted).toHaveLength(1);
      expect(counted[0]!.usage.inputTokens).toBeGreaterThan(0);
      expect(counted[0]!.usage.outputTokens).toBeGreaterThan(0);
      expect(spent).toMatchObject({ calls: 1, estimated: 1 });
    });

    it(`${kind}: a call that finished is charged once, exactly as reported, not estimated`, async () => {
      const { meter, provider, counted } = metered(kind);
      emulator().enqueue({ text: "A short answer.", usage: REPORTED });
      const { spent, failed, usageEvents } = await read(meter, provider, "whole");
      expect(failed).toBeUndefined();
      expect(usageEvents).toBe(1);
      expect(counted).toEqual([
        {
          usage: {
            inputTokens: REPORTED.input,
            outputTokens: REPORTED.output,
            cachedInputTokens: REPORTED.cached,
          },
          cost: expect.any(Number),
        },
      ]);
      expect(spent).toEqual({
        calls: 1,
        inputTokens: REPORTED.input,
        outputTokens: REPORTED.output,
        cachedInputTokens: REPORTED.cached,
        cost: expect.any(Number),
        unpriced: 0,
      });
    });
  }
});
