import { describe, expect, it } from "vitest";
import { FunctionHub, ScriptedProvider, say } from "../../test/support/scripted.js";
import { configSchema } from "../config.js";
import type { ChatMessage, ToolMessage, UserMessage } from "../core/messages.js";
import { newSession, type SessionRepository } from "../store/sessions.js";
import { Agent } from "./agent.js";
import { countTokens, messagesTokens } from "./context.js";
import type { ResumedStep } from "./loop.js";
import type { ModelRequest } from "./providers/provider.js";

const KEY = "slack:T1:C1:1712345678.000100";
const TURN = "turn-1";

const config = configSchema.parse({
  llm: { model: "scripted" },
  modelSettings: { scripted: { contextWindow: 8_000, maxOutputTokens: 1_000, tokenizerMargin: 0 } },
});

/** Under the 2,000 characters a tool result must pass to be halved. */
const logs = Array.from({ length: 100 }, (_, i) => `step ${String(i).padStart(2, "0")}: build ok`).join("\n");

function earlier(turns: number): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (let i = 0; i < turns; i++)
    out.push(
      { role: "user", content: `question ${i}: ${"why does the build fail on CI ".repeat(6)}` },
      { role: "assistant", content: `answer ${i}: ${"check the lock file ".repeat(6)}` },
    );
  return out;
}

/** Nearly the prompt's whole room: whole in the prompt, with no earlier turn left beside it. */
const page = Array.from({ length: 920 }, (_, i) => `line ${i}: artifact uploaded`).join("\n");

/** The request's system text and messages, against what agent.ts leaves them: the input budget less the tool specs, counted as it counts them. */
function withinBudget(request: ModelRequest): boolean {
  const tools = request.tools.reduce(
    (n, t) =>
      n +
      countTokens(
        JSON.stringify({
          type: "function",
          function: { name: t.name, description: t.description, parameters: t.inputSchema },
        }),
      ),
    0,
  );
  return countTokens(request.system ?? "") + messagesTokens(request.messages) <= 7_000 - tools;
}

async function resume(messages: ChatMessage[], turn: string | undefined) {
  const provider = new ScriptedProvider([say("All 100 steps passed.")]);
  const hub = new FunctionHub({ ci__logs: () => logs });
  // Never read by a resumed turn: the caller saves the session.
  const agent = new Agent({ config, hub, providerFor: () => provider, sessions: {} as SessionRepository });
  const session = newSession(KEY);
  session.messages = messages;
  const call = { id: "call_resumed", name: "ci__logs", arguments: {} };
  const resumed: ResumedStep = {
    step: { assistant: { role: "assistant", content: "", toolCalls: [call] }, asks: [call.id], settled: [] },
    verdicts: { [call.id]: { run: true } },
  };
  const run = agent.resumeTurn({
    session,
    user: { id: "U1" },
    platform: "slack",
    channel: "C1",
    signal: new AbortController().signal,
    resumed,
    ...(turn ? { turn } : {}),
  });
  let step = await run.next();
  while (!step.done) step = await run.next();
  expect(step.value.ok).toBe(true);
  return provider.requests;
}

describe("a resumed turn's question on a short window", () => {
  it("is the message the turn named, kept with its first step, though a user message was saved after it", async () => {
    const question: UserMessage = {
      role: "user",
      content: "upload the artifact, then read the CI logs",
      turn: TURN,
    };
    // The runtime writes none today (a new message ends a waiting turn, a dead turn is taken
    // over before the thread's next message): the question is found by its turn's name, so
    // that nothing depends on it staying the last one.
    const later: UserMessage = { role: "user", content: "also, which node version does CI use?" };
    const first = { id: "call_upload", name: "ci__upload", arguments: {} };
    const history: ChatMessage[] = [
      ...earlier(10),
      question,
      { role: "assistant", content: "", toolCalls: [first] },
      { role: "tool", toolCallId: first.id, name: first.name, content: page },
      later,
    ];

    const [request] = await resume(history, TURN);

    const sent = request!.messages;
    expect(sent).toContainEqual(question);
    const upload = sent.find((m): m is ToolMessage => m.role === "tool" && m.toolCallId === first.id);
    // Halved to make room, as an uninterrupted turn's own results are, rather than left out.
    expect(upload?.content.length).toBeLessThan(page.length);
    expect(sent.at(-1)).toMatchObject({ role: "tool", toolCallId: "call_resumed", content: logs });
    expect(withinBudget(request!)).toBe(true);
  });

  it("halves the results of its steps before the wait, as an uninterrupted turn's, rather than going over the window", async () => {
    // A turn parked on its second step's approval, after a first step that read a long page.
    const question: UserMessage = {
      role: "user",
      content: "upload the artifact, then read the CI logs",
      turn: TURN,
    };
    const first = { id: "call_upload", name: "ci__upload", arguments: {} };
    const history: ChatMessage[] = [
      ...earlier(10),
      question,
      { role: "assistant", content: "", toolCalls: [first] },
      { role: "tool", toolCallId: first.id, name: first.name, content: page },
    ];

    const [request] = await resume(history, TURN);

    const sent = request!.messages;
    expect(sent).toContainEqual(question);
    const upload = sent.find((m): m is ToolMessage => m.role === "tool" && m.toolCallId === first.id);
    expect(upload?.content.length).toBeLessThan(page.length);
    expect(sent.at(-1)).toMatchObject({ role: "tool", toolCallId: "call_resumed", content: logs });
    expect(withinBudget(request!)).toBe(true);
  });

  it("keeps its question and every step when those steps alone would fill the prompt's room", async () => {
    // A long turn, parked on its seventh step's approval: each status alone a third of the window.
    const question: UserMessage = {
      role: "user",
      content: "check every service, then restart the broken one",
      turn: TURN,
    };
    const history: ChatMessage[] = [...earlier(3), question];
    const status = (i: number) => Array.from({ length: 400 }, (_, j) => `row ${i}.${j}: value ok`).join("\n");
    for (let i = 0; i < 6; i++) {
      const id = `call_status_${i}`;
      history.push(
        { role: "assistant", content: "", toolCalls: [{ id, name: "ci__status", arguments: { i } }] },
        { role: "tool", toolCallId: id, name: "ci__status", content: status(i) },
      );
    }

    const [request] = await resume(history, TURN);

    const sent = request!.messages;
    expect(sent).toContainEqual(question);
    expect(sent[0]?.role).toBe("user");
    const steps = sent.filter((m) => m.role === "tool").map((m) => (m as ToolMessage).toolCallId);
    expect(steps).toEqual([0, 1, 2, 3, 4, 5].map((i) => `call_status_${i}`).concat("call_resumed"));
    expect(withinBudget(request!)).toBe(true);
  });
});
