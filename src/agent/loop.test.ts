import { describe, expect, it } from "vitest";
import { callTools, FunctionHub, ScriptedProvider, say } from "../../test/support/scripted.js";
import type { AgentEvent } from "../core/events.js";
import { countTokens, messagesTokens } from "./context.js";
import { type CallGate, type LoopResult, type ResumedStep, runToolLoop } from "./loop.js";
import type { ModelEvent } from "./providers/provider.js";
import { CUT_OFF_NOTE, NOTHING_WITHIN_LIMIT_NOTE } from "./step-stream.js";

async function run(
  provider: ScriptedProvider,
  hub: FunctionHub,
  opts: {
    maxSteps?: number;
    repeatLimit?: number;
    budgetTokens?: number;
    gate?: (call: { name: string }) => CallGate;
    resumed?: ResumedStep;
    mayGoOn?: () => Promise<string | undefined>;
  } = {},
) {
  const gen = runToolLoop(
    {
      provider,
      hub,
      model: "scripted",
      maxSteps: opts.maxSteps ?? 10,
      repeatLimit: opts.repeatLimit ?? 3,
      budgetTokens: opts.budgetTokens,
      signal: new AbortController().signal,
      gate: opts.gate,
      ...(opts.mayGoOn ? { mayGoOn: opts.mayGoOn } : {}),
    },
    { system: "sys", messages: [{ role: "user", content: "hi" }], tools: hub.tools() },
    opts.resumed,
  );
  const events: AgentEvent[] = [];
  let step = await gen.next();
  while (!step.done) {
    events.push(step.value);
    step = await gen.next();
  }
  const result: LoopResult = step.value;
  const text = events.flatMap((e) => (e.type === "text" ? [e.delta] : [])).join("");
  return { events, result, text };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("the tool loop", () => {
  it("asks whether it may go on before each model call after the first, and stops where it may not", async () => {
    const hub = new FunctionHub({ t__echo: () => "echoed" });
    const provider = new ScriptedProvider([
      callTools(["t__echo", { m: "1" }]),
      callTools(["t__echo", { m: "2" }]),
      say("never asked"),
    ]);
    const asked: number[] = [];
    const { result, text } = await run(provider, hub, {
      mayGoOn: async () => {
        asked.push(provider.requests.length);
        return asked.length === 2 ? "Budget spent." : undefined;
      },
    });
    // Not before the first request; before the second (allowed) and the third (refused).
    expect(asked).toEqual([1, 2]);
    expect(provider.requests).toHaveLength(2);
    expect(hub.calls.map((c) => c.args)).toEqual([{ m: "1" }, { m: "2" }]);
    expect(text).toBe("Budget spent.");
    expect(result).toMatchObject({ steps: 2, toolCalls: 2, stoppedBy: "budget" });
    // The steps stay whole (each call with its result); the sentence is not the model's.
    expect(result.added.map((m) => m.role)).toEqual(["assistant", "tool", "assistant", "tool"]);

    // A step resumed after approvals is followed by a model call: asked before it too.
    const waited = await run(new ScriptedProvider([callTools(["t__echo", { m: "3" }])]), hub, {
      gate: () => "ask",
    });
    const again = new ScriptedProvider([say("never asked")]);
    const resumed = await run(again, hub, {
      resumed: { step: waited.result.pending!, verdicts: { call_t__echo_0: { run: true } } },
      mayGoOn: async () => "Budget spent.",
    });
    expect(again.requests).toHaveLength(0);
    expect(resumed.result.stoppedBy).toBe("budget");
    expect(resumed.text).toBe("Budget spent.");
  });

  it("answers without tools in one step", async () => {
    const { result, text } = await run(new ScriptedProvider([say("Hello there")]), new FunctionHub({}));
    expect(text).toBe("Hello there");
    expect(result).toMatchObject({ steps: 1, toolCalls: 0, stoppedBy: "answer" });
    expect(result.added).toEqual([{ role: "assistant", content: "Hello there" }]);
  });

  it("says so when the model had to stop its answer at its output limit", async () => {
    const cut: ModelEvent[] = [
      { type: "text", delta: "The first three reasons are: one, two, and" },
      { type: "stop", reason: "length" },
    ];
    const { text, result } = await run(new ScriptedProvider([cut]), new FunctionHub({}));
    expect(text).toBe(`The first three reasons are: one, two, and\n\n${CUT_OFF_NOTE}`);
    // The thread keeps what the model wrote: asked to go on, it sees where it stopped.
    expect(result.added).toEqual([
      { role: "assistant", content: "The first three reasons are: one, two, and" },
    ]);
    // Nothing written before the limit (a reasoning model thought it all away).
    const empty = await run(
      new ScriptedProvider([[{ type: "stop", reason: "length" }]]),
      new FunctionHub({}),
    );
    expect(empty.text).toBe(NOTHING_WITHIN_LIMIT_NOTE);
    // A whole answer gets no note.
    const whole = await run(
      new ScriptedProvider([
        [
          { type: "text", delta: "Done." },
          { type: "stop", reason: "end" },
        ],
      ]),
      new FunctionHub({}),
    );
    expect(whole.text).toBe("Done.");
  });

  it("feeds tool results back as tool messages, never as user turns", async () => {
    const provider = new ScriptedProvider([callTools(["t__echo", { m: "x" }]), say("It said x")]);
    const { result } = await run(provider, new FunctionHub({ t__echo: (a) => `echo ${String(a.m)}` }));
    expect(result.added.map((m) => m.role)).toEqual(["assistant", "tool", "assistant"]);
    const second = provider.requests[1];
    expect(second?.messages.at(-1)).toMatchObject({
      role: "tool",
      toolCallId: "call_t__echo_0",
      content: "echo x",
    });
    expect(second?.messages.filter((m) => m.role === "user")).toHaveLength(1);
  });

  it("runs the calls of one step in parallel and keeps results in call order", async () => {
    const hub = new FunctionHub({
      t__slow: async () => {
        await sleep(150);
        return "slow";
      },
      t__fast: async () => {
        await sleep(150);
        return "fast";
      },
    });
    const provider = new ScriptedProvider([callTools(["t__slow", {}], ["t__fast", {}]), say("done")]);
    const { result } = await run(provider, hub);
    const [a, b] = hub.calls;
    // Both started before either ended: they overlapped.
    expect(b!.start).toBeLessThan(a!.end!);
    expect(result.added.filter((m) => m.role === "tool").map((m) => m.content)).toEqual(["slow", "fast"]);
  });

  it("stops a call repeated three times and asks for a final answer without tools", async () => {
    const same = callTools(["t__echo", { a: 1, b: 2 }]);
    const provider = new ScriptedProvider([
      same,
      callTools(["t__echo", { b: 2, a: 1 }]),
      same,
      say("giving up"),
    ]);
    const hub = new FunctionHub({ t__echo: () => "ok" });
    const { result, text } = await run(provider, hub);
    expect(hub.calls).toHaveLength(2);
    expect(result.stoppedBy).toBe("repeat");
    const last = provider.requests.at(-1)!;
    expect(last.toolChoice).toBe("none");
    expect(last.system).toContain("Do not call it again");
    expect(result.added.at(-2)).toMatchObject({ role: "tool", isError: true });
    expect(text).toContain("giving up");
  });

  it("asks for a final answer at the step limit and does not run calls made then", async () => {
    const provider = new ScriptedProvider([
      callTools(["t__a", { n: 1 }]),
      callTools(["t__a", { n: 2 }]),
      [
        ...callTools(["t__a", { n: 3 }]).slice(0, 1),
        { type: "text", delta: "Here is what I found." },
        { type: "stop", reason: "end" },
      ],
    ]);
    const hub = new FunctionHub({ t__a: () => "r" });
    const { result, text } = await run(provider, hub, { maxSteps: 2 });
    expect(hub.calls).toHaveLength(2);
    expect(result).toMatchObject({ stoppedBy: "step_limit", steps: 3 });
    expect(provider.requests[2]?.system).toContain("every tool step allowed");
    expect(text).toBe("Here is what I found.");
  });

  it("returns malformed arguments and unknown tools to the model as error results", async () => {
    const bad: ModelEvent[] = [
      { type: "tool_call", call: { id: "c1", name: "t__echo", arguments: {}, invalidArguments: "{oops" } },
      { type: "tool_call", call: { id: "c2", name: "t__nope", arguments: {} } },
      { type: "stop", reason: "tool_calls" },
    ];
    const provider = new ScriptedProvider([bad, say("fixed")]);
    const hub = new FunctionHub({ t__echo: () => "ok" });
    const { result } = await run(provider, hub);
    const tools = result.added.filter((m) => m.role === "tool");
    expect(tools[0]).toMatchObject({ isError: true });
    expect(tools[0]?.content).toContain("not a valid JSON object");
    expect(tools[1]).toMatchObject({ isError: true, content: "No tool named t__nope." });
    expect(hub.calls.map((c) => c.name)).toEqual(["t__nope"]);
  });

  it("never shows <think> blocks as answer text, even split across deltas", async () => {
    const provider = new ScriptedProvider([
      [
        { type: "text", delta: "<thi" },
        { type: "text", delta: "nk>secret plan</th" },
        { type: "text", delta: "ink>The answer is 4." },
        { type: "stop", reason: "end" },
      ],
    ]);
    const { events, text } = await run(provider, new FunctionHub({}));
    expect(text).toBe("The answer is 4.");
    expect(events).toContainEqual({ type: "status", text: "Thinking…" });
  });

  it("separates the text of successive steps", async () => {
    const provider = new ScriptedProvider([
      [{ type: "text", delta: "Let me check." }, ...callTools(["t__a", {}])],
      say("Found it."),
    ]);
    const { text } = await run(provider, new FunctionHub({ t__a: () => "r" }));
    expect(text).toBe("Let me check.\n\nFound it.");
  });

  it("trims a bulky tool result of this turn so the next step still fits the model's window", async () => {
    const bulky = Array.from({ length: 20_000 }, (_, i) => `line ${i} of the log`).join("\n");
    const provider = new ScriptedProvider([callTools(["t__logs", {}]), say("The log ends at line 19999.")]);
    const { text } = await run(provider, new FunctionHub({ t__logs: () => bulky }), { budgetTokens: 4_000 });
    const second = provider.requests[1]!;
    expect(countTokens(second.system) + messagesTokens(second.messages)).toBeLessThanOrEqual(4_000);
    const result = second.messages.at(-1)!;
    expect(result.content).toContain("line 0 of the log");
    expect(result.content).toContain("line 19999 of the log");
    expect(result.content).toMatch(/characters left out/);
    expect(text).toBe("The log ends at line 19999.");
  });

  it("trims a bulky result of an approved call before the resumed turn's first request", async () => {
    const bulky = Array.from({ length: 20_000 }, (_, i) => `line ${i} of the export`).join("\n");
    const hub = new FunctionHub({ t__export: () => bulky });
    const gate = (): CallGate => "ask";
    const { result: waited } = await run(new ScriptedProvider([callTools(["t__export", {}])]), hub, { gate });
    const provider = new ScriptedProvider([say("Exported 20,000 lines.")]);
    await run(provider, hub, {
      gate,
      budgetTokens: 4_000,
      resumed: { step: waited.pending!, verdicts: { call_t__export_0: { run: true } } },
    });
    const first = provider.requests[0]!;
    expect(countTokens(first.system) + messagesTokens(first.messages)).toBeLessThanOrEqual(4_000);
    expect(first.messages.at(-1)?.content).toMatch(/characters left out/);
  });

  it("stops before a step whose calls need approval, running none of them and adding nothing", async () => {
    const hub = new FunctionHub({ t__read: () => "read", t__write: () => "wrote" });
    const provider = new ScriptedProvider([
      callTools(["t__read", {}], ["t__write", { path: "a" }], ["t__gone", {}]),
      say("never asked"),
    ]);
    const gate = (call: { name: string }): CallGate =>
      call.name === "t__write" ? "ask" : call.name === "t__gone" ? { refuse: "not here" } : "run";
    const { result } = await run(provider, hub, { gate });
    expect(result.stoppedBy).toBe("waiting");
    expect(result.added).toEqual([]);
    expect(hub.calls).toEqual([]);
    expect(provider.requests).toHaveLength(1);
    expect(result.pending?.asks).toEqual(["call_t__write_1"]);
    expect(result.pending?.settled).toEqual([
      { role: "tool", toolCallId: "call_t__gone_2", name: "t__gone", content: "not here", isError: true },
    ]);
  });

  it("finishes a waited step with the decisions before asking the model again", async () => {
    const hub = new FunctionHub({ t__read: () => "read", t__write: () => "wrote" });
    const first = new ScriptedProvider([
      callTools(["t__read", {}], ["t__write", { path: "a" }], ["t__del", {}]),
    ]);
    const gate = (call: { name: string }): CallGate => (call.name === "t__read" ? "run" : "ask");
    const { result: waited } = await run(first, hub, { gate });
    const step = waited.pending!;
    const provider = new ScriptedProvider([say("Done")]);
    const { result } = await run(provider, hub, {
      gate,
      resumed: {
        step,
        verdicts: { call_t__write_1: { run: true }, call_t__del_2: { run: false, reason: "bob denied it" } },
      },
    });
    expect(hub.calls.map((c) => c.name).sort()).toEqual(["t__read", "t__write"]);
    expect(result.added.map((m) => (m.role === "tool" ? `${m.name}:${m.content}` : m.role))).toEqual([
      "assistant",
      "t__read:read",
      "t__write:wrote",
      "t__del:bob denied it",
      "assistant",
    ]);
    expect(result).toMatchObject({ stoppedBy: "answer", toolCalls: 2 });
    expect(provider.requests[0]?.messages.at(-1)).toMatchObject({ role: "tool", content: "bob denied it" });
  });
});
