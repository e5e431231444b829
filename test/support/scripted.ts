import type { ModelEvent, ModelRequest, Provider } from "../../src/agent/providers/provider.js";
import type { ToolEntry, ToolHub, ToolOutcome } from "../../src/mcp/types.js";

/** A deterministic model for loop tests (as agents-js's ScriptedModel): each call plays the next script. */
export class ScriptedProvider implements Provider {
  readonly name = "openai" as const;
  readonly requests: ModelRequest[] = [];
  constructor(private readonly script: Array<ModelEvent[] | ((req: ModelRequest) => ModelEvent[])>) {}

  async *stream(req: ModelRequest): AsyncIterable<ModelEvent> {
    this.requests.push(structuredClone(req));
    const next = this.script.shift();
    if (!next) throw new Error("script exhausted");
    for (const e of typeof next === "function" ? next(req) : next) yield e;
  }

  async listModels(): Promise<string[]> {
    return ["scripted"];
  }
}

export const say = (text: string): ModelEvent[] => [
  { type: "text", delta: text },
  { type: "usage", usage: { inputTokens: 10, outputTokens: 5 } },
  { type: "stop", reason: "end" },
];

export const callTools = (...calls: Array<[string, Record<string, unknown>]>): ModelEvent[] => [
  ...calls.map(
    ([name, args], i): ModelEvent => ({
      type: "tool_call",
      call: { id: `call_${name}_${i}`, name, arguments: args },
    }),
  ),
  { type: "stop", reason: "tool_calls" },
];

/** An in-memory hub whose tools are plain functions; records calls with their start and end. */
export class FunctionHub implements ToolHub {
  readonly calls: Array<{ name: string; args: Record<string, unknown>; start: number; end?: number }> = [];
  constructor(
    private readonly fns: Record<string, (args: Record<string, unknown>) => Promise<string> | string>,
  ) {}

  tools(): ToolEntry[] {
    return Object.keys(this.fns).map((name) => ({
      name,
      server: name.split("__")[0] ?? "test",
      tool: name.split("__")[1] ?? name,
      description: `test tool ${name}`,
      inputSchema: { type: "object", properties: {} },
    }));
  }

  status() {
    return [];
  }

  async call(name: string, args: Record<string, unknown>): Promise<ToolOutcome> {
    const record: { name: string; args: Record<string, unknown>; start: number; end?: number } = {
      name,
      args,
      start: performance.now(),
    };
    this.calls.push(record);
    const fn = this.fns[name];
    const [server = "test", tool = name] = name.split("__");
    if (!fn) return { ok: false, text: `No tool named ${name}.`, artifacts: [], ms: 0, server, tool };
    const text = await fn(args);
    record.end = performance.now();
    return { ok: true, text, artifacts: [], ms: 1, server, tool };
  }

  async close(): Promise<void> {}
}
