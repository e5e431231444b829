import { describe, expect, it } from "vitest";
import { FunctionHub } from "../../test/support/scripted.js";
import type { AgentEvent } from "../core/events.js";
import type { ToolMessage } from "../core/messages.js";
import { type LoopResult, runToolLoop } from "./loop.js";
import { emulatedProvider, useLlmEmulator } from "./providers/emulator-setup.test-helper.js";
import { CUT_OFF_NOTE } from "./step-stream.js";

const emulator = useLlmEmulator();

const kinds = [
  { kind: "openai" as const, model: "gpt-4o-mini" },
  { kind: "anthropic" as const, model: "claude-haiku-5-5" },
];

/** A file the model means to write in one call: far longer than its output limit allows. */
const longWrite = { name: "fs__write_ok", arguments: { path: "report.md", content: "x".repeat(500) } };

describe.each(kinds)("the tool loop on $kind, at the output limit", ({ kind, model }) => {
  async function run(hub: FunctionHub, opts: { maxOutputTokens: number; maxSteps?: number }) {
    const gen = runToolLoop(
      {
        provider: emulatedProvider(emulator(), kind, { apiKey: "sk-test-cut-off" }),
        hub,
        model,
        maxSteps: opts.maxSteps ?? 10,
        repeatLimit: 3,
        maxOutputTokens: opts.maxOutputTokens,
        signal: new AbortController().signal,
      },
      { system: "sys", messages: [{ role: "user", content: "write the report" }], tools: hub.tools() },
    );
    const events: AgentEvent[] = [];
    let step = await gen.next();
    while (!step.done) {
      events.push(step.value);
      step = await gen.next();
    }
    const result: LoopResult = step.value;
    const text = events.flatMap((e) => (e.type === "text" ? [e.delta] : [])).join("");
    const results = result.added.filter((m): m is ToolMessage => m.role === "tool");
    return { result, text, results };
  }

  const writer = () => new FunctionHub({ fs__write_ok: () => "written" });

  it("does not run a call cut in its arguments, and tells the model to split it into smaller calls", async () => {
    emulator().enqueue(
      { text: "Writing.", toolCalls: [longWrite] },
      { toolCalls: [{ name: "fs__write_ok", arguments: { path: "report.md", content: "part 1" } }] },
      { text: "Written in parts." },
    );
    const hub = writer();
    // 20 tokens: the emulator's 80 characters, well inside the call's arguments.
    const { result, text, results } = await run(hub, { maxOutputTokens: 20 });
    expect(hub.calls.map((c) => c.args)).toEqual([{ path: "report.md", content: "part 1" }]);
    expect(results[0]?.isError).toBe(true);
    expect(results[0]?.content).toContain("was cut off");
    expect(results[0]?.content).toContain("Split the content into smaller calls");
    // The half-written arguments are neither kept nor sent back.
    const first = result.added[0];
    expect(first?.role === "assistant" && first.toolCalls?.[0]).toEqual({
      id: expect.any(String),
      name: "fs__write_ok",
      arguments: {},
    });
    expect(text).toBe("Writing.\n\nWritten in parts.");
    expect(result.stoppedBy).toBe("answer");
  });

  it("never runs a call cut right after it was opened, whose arguments read as empty", async () => {
    // "Writing." and the tool's name are the 20 characters 5 tokens allow: no argument written.
    emulator().enqueue({ text: "Writing.", toolCalls: [longWrite] }, { text: "Too long." });
    const hub = writer();
    const { results } = await run(hub, { maxOutputTokens: 5 });
    expect(hub.calls).toEqual([]);
    expect(results.map((r) => r.content)).toEqual([expect.stringContaining("was cut off")]);
  });

  it("asks for a final answer without tools after three calls cut off in one turn", async () => {
    const cut = { toolCalls: [longWrite] };
    emulator().enqueue(cut, cut, cut, { text: "The report is too long to write in one go." });
    const hub = writer();
    const { result } = await run(hub, { maxOutputTokens: 20 });
    expect(hub.calls).toEqual([]);
    expect(result.stoppedBy).toBe("cut_off");
    const last = emulator().requests.at(-1);
    expect(emulator().requests).toHaveLength(4);
    expect(last?.system).toContain("cut off at the output limit");
  });

  it("says the answer was cut off when its last step ends in a cut call", async () => {
    emulator().enqueue(
      { toolCalls: [{ name: "fs__write_ok", arguments: { path: "a" } }] },
      // The final step, asked for without tools, still writes a call (as some servers allow).
      { text: "Here it is:", toolCalls: [longWrite] },
    );
    const hub = writer();
    const { text, result } = await run(hub, { maxOutputTokens: 20, maxSteps: 1 });
    expect(hub.calls).toHaveLength(1);
    expect(text).toBe(`Here it is:\n\n${CUT_OFF_NOTE}`);
    expect(result.stoppedBy).toBe("step_limit");
  });
});
