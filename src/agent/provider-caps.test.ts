import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { LlmEmulator } from "../../test/emulators/llm/index.js";
import { FunctionHub } from "../../test/support/scripted.js";
import { configSchema } from "../config.js";
import type { AgentEvent } from "../core/events.js";
import { log } from "../log.js";
import { newSession, type SessionRepository } from "../store/sessions.js";
import { Agent } from "./agent.js";
import { modelLimits } from "./model-limits.js";
import { emulatedProvider } from "./providers/emulator-setup.test-helper.js";
import { MAX_OFFERED_TOOLS, SEARCH_TOOL } from "./tool-offer.js";

let emulator: LlmEmulator;
beforeAll(async () => {
  emulator = await LlmEmulator.start();
});
afterEach(() => {
  emulator.reset();
  vi.restoreAllMocks();
});
afterAll(() => emulator.close());

function agent(settings: Record<string, unknown>, hub = new FunctionHub({})): Agent {
  const config = configSchema.parse(settings);
  return new Agent({
    config,
    hub,
    providerFor: () => emulatedProvider(emulator, config.llm.provider, { apiKey: "sk-test-caps" }),
    sessions: {} as SessionRepository,
  });
}

/** Runs one turn of `text`; returns its error events. */
async function turn(run: Agent, text: string): Promise<AgentEvent[]> {
  const events: AgentEvent[] = [];
  for await (const event of run.runTurn({
    session: newSession(`console:${Math.random()}`),
    user: { id: "U1" },
    text,
    platform: "console",
    channel: "local",
    signal: new AbortController().signal,
  })) {
    events.push(event);
  }
  return events.filter((e) => e.type === "error");
}

const warnings = (spy: { mock: { calls: unknown[][] } }, about: string) =>
  spy.mock.calls.filter((c) => String(c[1]).includes(about));

describe("a configured maxOutputTokens above the model's own cap", () => {
  it("asks gpt-4o for its 16,384, which the API takes, and warns once naming the setting", async () => {
    const warn = vi.spyOn(log, "warn");
    const run = agent({
      llm: { provider: "openai", model: "gpt-4o" },
      modelSettings: { "gpt-4o": { maxOutputTokens: 32_000 } },
    });
    emulator.enqueue({ text: "Hello." }, { text: "Hello again." });
    expect(await turn(run, "Hi")).toEqual([]);
    expect(await turn(run, "Hi again")).toEqual([]);
    const sent = emulator.requests[0]?.body;
    expect(sent?.max_completion_tokens ?? sent?.max_tokens).toBe(16_384);
    expect(warnings(warn, "modelSettings.gpt-4o.maxOutputTokens")).toHaveLength(1);
  });

  it("asks a Claude model for its own cap, which the Messages API takes", async () => {
    const model = "claude-sonnet-4-5-20250929";
    const run = agent({
      llm: { provider: "anthropic", model },
      modelSettings: { [model]: { maxOutputTokens: 100_000 } },
    });
    emulator.enqueue({ text: "Hello." });
    expect(await turn(run, "Hi")).toEqual([]);
    expect(emulator.requests[0]?.body.max_tokens).toBe(64_000);
  });

  it("keeps it for a Claude model the table only guesses at, and below a known cap", () => {
    const config = configSchema.parse({
      modelSettings: {
        "claude-sonnet-5-5": { maxOutputTokens: 100_000 },
        "gpt-4o": { maxOutputTokens: 2_000 },
      },
    });
    expect(modelLimits(config, "claude-sonnet-5-5").maxOutputTokens).toBe(100_000);
    expect(modelLimits(config, "gpt-4o").maxOutputTokens).toBe(2_000);
  });
});

describe("a catalog of more tools than OpenAI takes in one request", () => {
  const hub = () =>
    new FunctionHub(
      Object.fromEntries(
        Array.from({ length: 150 }, (_, i) => [
          i === 140 ? "tickets__close_ticket" : `misc__tool_${i}`,
          () => "ok",
        ]),
      ),
    );

  it("is offered as 128 tools, the relevant one among them, when maxTools allows more", async () => {
    const warn = vi.spyOn(log, "warn");
    const run = agent(
      { llm: { provider: "openai", model: "gpt-4o" }, agent: { toolBudget: { maxTools: 200 } } },
      hub(),
    );
    emulator.enqueue({ text: "Closed." });
    expect(await turn(run, "Please close ticket 42")).toEqual([]);
    const offered = emulator.requests[0]?.toolNames ?? [];
    expect(offered).toHaveLength(MAX_OFFERED_TOOLS);
    expect(offered).toContain("tickets__close_ticket");
    expect(offered.at(-1)).toBe(SEARCH_TOOL);
    expect(warnings(warn, "agent.toolBudget.maxTools")).toHaveLength(1);
  });
});
