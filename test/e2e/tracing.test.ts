/**
 * Traces (issue: see and steer what it costs): a tool-using turn on the real app, Discord
 * and LLM emulated, exported over OTLP/HTTP to a receiver on 127.0.0.1.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DEFAULT_PRICES } from "../../src/agent/prices.js";
import { log } from "../../src/log.js";
import { parseInteractionId } from "../../src/runtime/interaction-ids.js";
import { FeedbackBook } from "../../src/store/feedback.js";
import { DiscordEmulator, type StoredMessage, waitFor } from "../emulators/discord/index.js";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../emulators/llm/index.js";
import { type RunningApp, startWithEverything } from "../support/app-env.js";
import { isTitleRequest, lastUserText, toolResultsSinceUser } from "../support/llm-text.js";
import { OtlpReceiver, type ReceivedSpan } from "../support/otlp-receiver.js";
import { sharedTurn } from "../support/scenario.js";

let llm: LlmEmulator;
let discord: DiscordEmulator;
let receiver: OtlpReceiver;
let running: RunningApp | undefined;

function responder(req: RecordedRequest): ScriptedTurn {
  if (isTitleRequest(req)) return { text: "Tiny image" };
  return sharedTurn(lastUserText(req).replace(/^\[[^\]]*\]\s*/, ""), toolResultsSinceUser(req).length);
}

beforeAll(async () => {
  [llm, discord, receiver] = await Promise.all([
    LlmEmulator.start({ responder }),
    DiscordEmulator.start(),
    OtlpReceiver.start(),
  ]);
}, 30_000);

afterAll(async () => {
  await running?.stop();
  await discord?.stop();
  await llm?.close();
  await receiver?.close();
});

describe("traces", () => {
  it("exports a tool-using turn: the turn's span is the parent of its model, tool and write spans", async () => {
    // The turn's log line (info) names its trace; the level is set before the spy, as pino
    // replaces its level methods when the level changes.
    const level = log.level;
    log.level = "info";
    const info = vi.spyOn(log, "info").mockImplementation(() => undefined);
    running = await startWithEverything("llm:\n  maxRetries: 0\ntracing:\n  toolContent: true\n", {
      llm,
      discord,
      extra: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_SERVICE_NAME: "switchboard-test" },
    });
    const m = discord.userMessage(discord.state.general, "image please", { mentionsBot: true });
    type Button = { custom_id: string; label: string };
    const thumbsUp = (b: StoredMessage) =>
      ((b.components ?? []) as Array<{ components?: Button[] }>)
        .flatMap((r) => r.components ?? [])
        .find((x) => x.label === "👍");
    const answer = await waitFor(
      () => discord.botMessages(m.id).find((b) => b.content === "Here is the image." && thumbsUp(b)),
      { timeoutMs: 20_000 },
    );
    await running.app.dispatcher.settled();
    // The answer's 👍 / 👎 are stored with the turn's trace id, for whoever reads a vote's trace.
    const ref = parseInteractionId(thumbsUp(answer)!.custom_id)!.ref;
    const rated = await new FeedbackBook(running.app.store).find(ref);
    // The thread has its title now: its next turn has nothing to do after it.
    discord.userMessage(m.id, "second question");
    await waitFor(() => discord.botMessages(m.id).some((b) => b.content === "You said: second question"), {
      timeoutMs: 20_000,
    });
    await running.app.dispatcher.settled();
    // Stopping sends what is still buffered.
    await running.stop();
    running = undefined;
    const turnLines = info.mock.calls
      .filter((c) => c[1] === "turn")
      .map((c) => c[0] as Record<string, unknown>);
    info.mockRestore();
    log.level = level;

    const turns = receiver.spans.filter((s) => s.name === "switchboard.turn");
    expect(turns, receiver.spans.map((s) => s.name).join(", ")).toHaveLength(2);
    // The tool-using turn: the first.
    const turn = turns.find((t) =>
      receiver.spans.some((c) => c.parentSpanId === t.spanId && c.name.startsWith("execute_tool ")),
    );
    expect(turn!.service).toBe("switchboard-test");
    expect(rated?.traceId).toBe(turn!.traceId);
    expect(turn!.attributes).toMatchObject({
      "switchboard.platform": "discord",
      "switchboard.outcome": "ok",
    });
    const children = receiver.spans.filter((s) => s.parentSpanId === turn!.spanId);
    const named = (prefix: string) => children.filter((s) => s.name.startsWith(prefix));
    for (const s of children) expect(s.traceId).toBe(turn!.traceId);

    const models = named("chat ");
    // The tool step and the answer.
    expect(models).toHaveLength(2);
    for (const model of models) {
      expect(model.name).toBe("chat gpt-4o-mini");
      expect(model.kind).toBe(3); // CLIENT
      expect(model.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
      });
      expect(model.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);
      expect(model.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0);
      expect(model.attributes["gen_ai.response.time_to_first_chunk"]).toBeGreaterThan(0);
    }
    // The turn's span sums its model calls' usage, priced by the default table.
    const tokens = (key: string) => models.reduce((a, s) => a + (s.attributes[key] as number), 0);
    const [input, output] = [tokens("gen_ai.usage.input_tokens"), tokens("gen_ai.usage.output_tokens")];
    const price = DEFAULT_PRICES["gpt-4o-mini"]!;
    const cost = (input * price.input + output * price.output) / 1e6;
    expect(turn!.attributes).toMatchObject({
      "gen_ai.usage.input_tokens": input,
      "gen_ai.usage.output_tokens": output,
      "switchboard.usage.model_calls": 2,
    });
    expect(turn!.attributes["switchboard.usage.cost_usd"]).toBeCloseTo(cost, 12);
    // Its log line has the same cost and names its trace.
    const line = turnLines.find((l) => l.traceId === turn!.traceId);
    expect(line, JSON.stringify(turnLines)).toMatchObject({ outcome: "ok", toolCalls: 1 });
    expect(line!.costUsd).toBeCloseTo(cost, 12);
    expect(models.map((s) => s.attributes["gen_ai.response.finish_reasons"]).sort()).toEqual([
      ["end"],
      ["tool_calls"],
    ]);

    const [tool, ...more] = named("execute_tool ");
    expect(more).toEqual([]);
    expect(tool?.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "get-tiny-image",
      "switchboard.mcp.server": "everything",
      "switchboard.tool.outcome": "ok",
      "gen_ai.tool.call.arguments": "{}",
    });

    const writes = named("discord ");
    expect(writes.length, children.map((s) => s.name).join(", ")).toBeGreaterThan(0);
    for (const w of writes) {
      expect(w.attributes["switchboard.write.platform"]).toBe("discord");
      expect(w.attributes["switchboard.write.rate_limited"]).toBe(0);
    }
    // The reply's writes are named by the REST call they made, not by the writer's wish.
    const names = writes.map((w) => w.name);
    expect(names).not.toContain("discord reply write");
    expect(names, names.join(", ")).toContain("discord POST /api/v10/channels/:id/messages");
    // The title is made after the turn, and still belongs to it.
    const afterTurns = receiver.spans.filter((s: ReceivedSpan) => s.name === "switchboard.after_turn");
    expect(afterTurns.map((s) => s.parentSpanId)).toEqual([turn!.spanId]);
  }, 60_000);
});
