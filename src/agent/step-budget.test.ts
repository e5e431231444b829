import { describe, expect, it } from "vitest";
import { callTools, FunctionHub, ScriptedProvider, say } from "../../test/support/scripted.js";
import type { ChatMessage, ToolMessage, UserMessage } from "../core/messages.js";
import { buildPrompt, countTokens, inputBudgetOf, messagesTokens } from "./context.js";
import { type ResumedStep, runToolLoop } from "./loop.js";

const user = (content: string): UserMessage => ({ role: "user", content });

/** Earlier turns, each with a tool call and its result: together well past an 8,000-token window. */
function longHistory(turns: number): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (let i = 0; i < turns; i++) {
    const id = `old_${i}`;
    out.push(
      user(`question ${i}: ${"why does the build fail on CI after the upgrade ".repeat(8)}`),
      { role: "assistant", content: "", toolCalls: [{ id, name: "t__logs", arguments: { run: i } }] },
      { role: "tool", toolCallId: id, name: "t__logs", content: `run ${i}: ${"exit code 1 ".repeat(30)}` },
      { role: "assistant", content: `answer ${i}: ${"check the lock file and the node version ".repeat(6)}` },
    );
  }
  return out;
}

const limits = { contextWindow: 8_000, maxOutputTokens: 1_000 };
const toolsTokens = 200;
/** What agent.ts gives the loop: the input budget less the tool specs. */
const budget = inputBudgetOf(limits) - toolsTokens;
/** Under the 2,000 characters a tool result must pass to be halved. */
const logs = Array.from({ length: 100 }, (_, i) => `step ${String(i).padStart(2, "0")}: build ok`).join("\n");

async function turn(history: ChatMessage[], current: UserMessage | undefined, resumed?: ResumedStep) {
  const prompt = buildPrompt({ system: "sys", history, current, limits, toolsTokens });
  const provider = new ScriptedProvider(
    resumed ? [say("All 100 steps passed.")] : [callTools(["t__logs", {}]), say("All 100 steps passed.")],
  );
  const gen = runToolLoop(
    {
      provider,
      hub: new FunctionHub({ t__logs: () => logs }),
      model: "scripted",
      maxSteps: 5,
      repeatLimit: 3,
      maxOutputTokens: limits.maxOutputTokens,
      budgetTokens: budget,
      signal: new AbortController().signal,
    },
    {
      system: prompt.system,
      messages: prompt.messages,
      tools: () => new FunctionHub({ t__logs: () => logs }).tools(),
    },
    resumed,
  );
  let step = await gen.next();
  while (!step.done) step = await gen.next();
  return { requests: provider.requests, result: step.value };
}

/** Every tool result right after the call that asked for it, as both APIs require. */
function paired(messages: ChatMessage[]): boolean {
  return messages.every((m, i) => {
    if (m.role !== "tool") return true;
    for (let j = i - 1; j >= 0; j--) {
      const before = messages[j] as ChatMessage;
      if (before.role === "tool") continue;
      return before.role === "assistant" && (before.toolCalls ?? []).some((c) => c.id === m.toolCallId);
    }
    return false;
  });
}

describe("a turn's later steps on a history that fills the window", () => {
  it("keeps every request within the budget by leaving out the oldest turns, never this turn's question or results", async () => {
    expect(logs.length).toBeGreaterThan(1_400);
    expect(logs.length).toBeLessThan(2_000);
    const history = longHistory(30);
    expect(messagesTokens(history)).toBeGreaterThan(budget);
    const question = user("what do the logs of the last run say?");

    const { requests, result } = await turn(history, question);

    expect(requests).toHaveLength(2);
    for (const req of requests) {
      expect(countTokens(req.system ?? "") + messagesTokens(req.messages)).toBeLessThanOrEqual(budget);
      expect(req.messages[0]?.role).toBe("user");
      expect(paired(req.messages)).toBe(true);
    }
    const second = requests[1]!.messages;
    expect(second).toContainEqual(question);
    const results = second.filter(
      (m): m is ToolMessage => m.role === "tool" && m.toolCallId === "call_t__logs_0",
    );
    expect(results.map((m) => m.content)).toEqual([logs]);
    // Only what had to go: the second request still holds the newest earlier turn.
    expect(second.some((m) => m.content.startsWith("answer 29:"))).toBe(true);
    expect(result.stoppedBy).toBe("answer");
  });

  it("keeps a resumed turn's question, found in the history, when the step after its approved call needs room", async () => {
    const question = user("what do the logs of the last run say?");
    const call = { id: "call_resumed", name: "t__logs", arguments: {} };
    const history = [...longHistory(30), question];
    const resumed: ResumedStep = {
      step: {
        assistant: { role: "assistant", content: "", toolCalls: [call] },
        asks: [call.id],
        settled: [],
      },
      verdicts: { [call.id]: { run: true } },
    };

    const { requests } = await turn(history, undefined, resumed);

    const first = requests[0]!;
    expect(countTokens(first.system ?? "") + messagesTokens(first.messages)).toBeLessThanOrEqual(budget);
    expect(first.messages[0]?.role).toBe("user");
    expect(first.messages).toContainEqual(question);
    expect(first.messages.at(-1)).toMatchObject({ role: "tool", toolCallId: call.id, content: logs });
  });
});
