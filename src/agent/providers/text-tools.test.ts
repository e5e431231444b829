import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LlmEmulator } from "../../../test/emulators/llm/index.js";
import { ScriptedProvider } from "../../../test/support/scripted.js";
import type { ChatMessage, ToolCall } from "../../core/messages.js";
import { OpenAIProvider } from "./openai.js";
import type { ModelEvent } from "./provider.js";
import { renderHistory, ToolCallParser, toolManifest, withTextToolProtocol } from "./text-tools.js";

type Parsed = ReturnType<ToolCallParser["push"]>;

/** Feeds the chunks, then ends the stream; returns everything the parser emitted. */
function parseChunks(chunks: string[]): Parsed {
  const parser = new ToolCallParser();
  return [...chunks.flatMap((c) => parser.push(c)), ...parser.finish()];
}

const textOf = (events: Parsed | ModelEvent[]) =>
  events.map((e) => (e.type === "text" ? e.delta : "")).join("");
const callsOf = (events: Parsed | ModelEvent[]): Array<Omit<ToolCall, "id">> =>
  events.flatMap((e) => {
    if (e.type !== "tool_call") return [];
    const { id: _id, ...rest } = e.call;
    return [rest];
  });

describe("the <tool_call> stream parser", () => {
  it("releases text outside tags at once", () => {
    const parser = new ToolCallParser();
    expect(parser.push("Hello, ")).toEqual([{ type: "text", delta: "Hello, " }]);
    expect(parser.push("world.")).toEqual([{ type: "text", delta: "world." }]);
  });

  it("holds back only a possible partial opening tag at the end of a chunk", () => {
    const parser = new ToolCallParser();
    expect(parser.push("Let me check <tool")).toEqual([{ type: "text", delta: "Let me check " }]);
    const rest = parser.push('_call>{"name":"fs__read","arguments":{"path":"/a"}}</tool_call> Done.');
    expect(callsOf(rest)).toEqual([{ name: "fs__read", arguments: { path: "/a" } }]);
    expect(textOf(rest)).toBe(" Done.");
  });

  it("releases a held-back '<' as soon as it cannot start a tag", () => {
    const parser = new ToolCallParser();
    expect(parser.push("1 <")).toEqual([{ type: "text", delta: "1 " }]);
    expect(parser.push(" 2")).toEqual([{ type: "text", delta: "< 2" }]);
  });

  it("parses a block whose tags and JSON are split into one-character chunks", () => {
    const stream = 'Before <tool_call>{"name": "web__search", "arguments": {"q": "a<b"}}</tool_call> after';
    const events = parseChunks([...stream]);
    expect(textOf(events)).toBe("Before  after");
    expect(callsOf(events)).toEqual([{ name: "web__search", arguments: { q: "a<b" } }]);
  });

  it("parses several blocks in one chunk, each with its own id", () => {
    const events = parseChunks([
      '<tool_call>{"name":"a","arguments":{}}</tool_call>\n<tool_call>{"name":"b","arguments":{"n":1}}</tool_call>',
    ]);
    expect(callsOf(events)).toEqual([
      { name: "a", arguments: {} },
      { name: "b", arguments: { n: 1 } },
    ]);
    const ids = events.flatMap((e) => (e.type === "tool_call" ? [e.call.id] : []));
    expect(new Set(ids).size).toBe(2);
    expect(ids.every((id) => id.length > 5)).toBe(true);
  });

  it("accepts <tool_code> as an alias", () => {
    const events = parseChunks(["<tool_co", 'de>{"name":"a","arguments":{"x":true}}</tool_', "code>"]);
    expect(callsOf(events)).toEqual([{ name: "a", arguments: { x: true } }]);
    expect(textOf(events)).toBe("");
  });

  it("turns malformed JSON inside a block into a call with invalidArguments", () => {
    const events = parseChunks(['<tool_call>{"name": "fs__read", "arguments": {"path": </tool_call>']);
    expect(callsOf(events)).toEqual([
      { name: "fs__read", arguments: {}, invalidArguments: '{"name": "fs__read", "arguments": {"path":' },
    ]);
  });

  it("marks arguments that are not an object as invalid", () => {
    const events = parseChunks(['<tool_call>{"name":"a","arguments":[1,2]}</tool_call>']);
    expect(callsOf(events)).toEqual([{ name: "a", arguments: {}, invalidArguments: "[1,2]" }]);
  });

  it("unwraps arguments a model encoded twice and JSON fenced inside the block", () => {
    const events = parseChunks([
      '<tool_call>\n```json\n{"name":"a","arguments":"{\\"k\\":2}"}\n```\n</tool_call>',
    ]);
    expect(callsOf(events)).toEqual([{ name: "a", arguments: { k: 2 } }]);
  });

  it("keeps an unclosed block that parses as a call, and gives back one that does not as text", () => {
    expect(callsOf(parseChunks(['<tool_call>{"name":"a","arguments":{}}']))).toEqual([
      { name: "a", arguments: {} },
    ]);
    const broken = parseChunks(["Text <tool_call>{oops"]);
    expect(callsOf(broken)).toEqual([]);
    expect(textOf(broken)).toBe("Text <tool_call>{oops");
  });

  it("releases a trailing partial tag as text when the stream ends", () => {
    expect(parseChunks(["a <tool_c"])).toEqual([
      { type: "text", delta: "a " },
      { type: "text", delta: "<tool_c" },
    ]);
  });
});

describe("an answer the output limit cut inside a <tool_call> block", () => {
  /** The events of the text protocol over an inner provider that writes `text`, then stops at its limit. */
  async function cutAnswer(text: string): Promise<ModelEvent[]> {
    const inner = new ScriptedProvider([
      [...text]
        .map((delta): ModelEvent => ({ type: "text", delta }))
        .concat({ type: "stop", reason: "length" }),
    ]);
    const events: ModelEvent[] = [];
    const request = {
      model: "qwen-local",
      system: "sys",
      messages: [{ role: "user" as const, content: "go" }],
    };
    const stream = withTextToolProtocol(inner).stream(
      { ...request, tools: [{ name: "t__w", description: "Write.", inputSchema: { type: "object" } }] },
      new AbortController().signal,
    );
    for await (const event of stream) events.push(event);
    return events;
  }
  const cutCalls = (events: ModelEvent[]) =>
    events.flatMap((e) => (e.type === "tool_call" && e.cutOff ? [e.call.name] : []));

  it("gives the cut call as a cutOff tool_call, never as text with the protocol's tag", async () => {
    const events = await cutAnswer('Writing it.\n<tool_call>{"name":"t__w","arguments":{"c":"xxx');
    expect(textOf(events)).toBe("Writing it.\n");
    expect(textOf(events)).not.toContain("<tool_call>");
    expect(cutCalls(events)).toEqual(["t__w"]);
    expect(events.at(-1)).toEqual({ type: "stop", reason: "length" });
  });

  it("keeps the length stop after complete calls, and marks only the cut one cutOff", async () => {
    const events = await cutAnswer(
      '<tool_call>{"name":"t__w","arguments":{"c":"a"}}</tool_call>\n<tool_call>{"name":"t__w","arguments":{"c":"xx',
    );
    expect(callsOf(events).map((c) => c.name)).toEqual(["t__w", "t__w"]);
    expect(events.flatMap((e) => (e.type === "tool_call" ? [e.cutOff ?? false] : []))).toEqual([false, true]);
    expect(textOf(events).trim()).toBe("");
    expect(events.at(-1)).toEqual({ type: "stop", reason: "length" });
  });

  it("marks a call cut before its name was written cutOff too, with no name", async () => {
    const events = await cutAnswer('<tool_call>{"na');
    expect(textOf(events)).toBe("");
    expect(cutCalls(events)).toEqual([""]);
  });
});

describe("the text protocol's history", () => {
  it("renders calls as <tool_call> text and results of one step as one user message", () => {
    const history: ChatMessage[] = [
      { role: "user", content: "read it" },
      {
        role: "assistant",
        content: "Reading.",
        toolCalls: [
          { id: "c1", name: "fs__read", arguments: { path: "/a" } },
          { id: "c2", name: "fs__read", arguments: { path: "/b" } },
        ],
      },
      { role: "tool", toolCallId: "c1", name: "fs__read", content: "AAA" },
      { role: "tool", toolCallId: "c2", name: "fs__read", content: "no such file", isError: true },
    ];
    expect(renderHistory(history)).toEqual([
      { role: "user", content: "read it" },
      {
        role: "assistant",
        content:
          'Reading.\n<tool_call>{"name":"fs__read","arguments":{"path":"/a"}}</tool_call>\n<tool_call>{"name":"fs__read","arguments":{"path":"/b"}}</tool_call>',
      },
      {
        role: "user",
        content:
          '<tool_result name="fs__read" id="c1">\nAAA\n</tool_result>\n<tool_result name="fs__read" id="c2" error="true">\nno such file\n</tool_result>',
      },
    ]);
    expect(history[2]).toEqual({ role: "tool", toolCallId: "c1", name: "fs__read", content: "AAA" });
  });
});

describe("the text protocol's manifest", () => {
  const tools = [{ name: "fs__read", description: "Read a file.", inputSchema: { type: "object" } }];

  it("tells the model not to call tools when the request asks for no tool calls", () => {
    expect(toolManifest(tools, "none")).toContain("Do not call any tool now");
    expect(toolManifest(tools, "auto")).not.toContain("Do not call any tool now");
  });
});

describe("a model without native tools, through the OpenAI provider", () => {
  let emulator: LlmEmulator;
  beforeAll(async () => {
    emulator = await LlmEmulator.start();
  });
  afterAll(async () => {
    await emulator.close();
  });

  it("gets the manifest in its system prompt, no native tools, and its <tool_call> text becomes calls", async () => {
    const inner = new OpenAIProvider({
      apiKey: "not-needed",
      baseURL: emulator.openaiBaseUrl,
      maxRetries: 0,
      timeoutMs: 10_000,
    });
    emulator.enqueue({
      text: 'I will look.\n<tool_call>{"name": "fs__read", "arguments": {"path": "/etc/hosts"}}</tool_call>',
      chunkSize: 3,
    });
    const schema = { type: "object", properties: { path: { type: "string" } }, required: ["path"] };
    const events: ModelEvent[] = [];
    const stream = withTextToolProtocol(inner).stream(
      {
        model: "qwen-local",
        system: "You help.",
        messages: [
          { role: "user", content: "earlier" },
          { role: "assistant", content: "", toolCalls: [{ id: "c0", name: "fs__list", arguments: {} }] },
          { role: "tool", toolCallId: "c0", name: "fs__list", content: "hosts" },
          { role: "user", content: "read hosts" },
        ],
        tools: [{ name: "fs__read", description: "Read a file.", inputSchema: schema }],
        toolChoice: "auto",
      },
      new AbortController().signal,
    );
    for await (const event of stream) events.push(event);

    expect(textOf(events)).toBe("I will look.\n");
    expect(callsOf(events)).toEqual([{ name: "fs__read", arguments: { path: "/etc/hosts" } }]);
    expect(events.at(-1)).toEqual({ type: "stop", reason: "tool_calls" });

    const sent = emulator.requests[0];
    expect(sent?.toolNames).toEqual([]);
    expect(sent?.body).not.toHaveProperty("tools");
    expect(sent?.body).not.toHaveProperty("tool_choice");
    expect(sent?.system).toMatch(/^You help\.\n\n# Tools\n/);
    expect(sent?.system).toContain("### fs__read\nRead a file.");
    expect(sent?.system).toContain(JSON.stringify(schema));
    expect(sent?.system).toContain(
      '<tool_call>{"name": "TOOL_NAME", "arguments": {"param": "value"}}</tool_call>',
    );
    expect(sent?.messages).toEqual([
      { role: "system", content: sent?.system },
      { role: "user", content: "earlier" },
      { role: "assistant", content: '<tool_call>{"name":"fs__list","arguments":{}}</tool_call>' },
      { role: "user", content: '<tool_result name="fs__list" id="c0">\nhosts\n</tool_result>' },
      { role: "user", content: "read hosts" },
    ]);
  });
  /** The events of one text-protocol stream of `model` whose answer the emulator writes as `text`. */
  async function textProtocolEvents(
    model: string,
    text: string,
    more: { contentFilter?: true } = {},
  ): Promise<ModelEvent[]> {
    const inner = new OpenAIProvider({
      apiKey: "not-needed",
      baseURL: emulator.openaiBaseUrl,
      maxRetries: 0,
      timeoutMs: 10_000,
    });
    emulator.enqueue({ text, chunkSize: 5, ...more });
    const events: ModelEvent[] = [];
    const stream = withTextToolProtocol(inner).stream(
      {
        model,
        system: "You help.",
        messages: [{ role: "user", content: "the login is broken, file a ticket" }],
        tools: [
          { name: "jira__create_issue", description: "File an issue.", inputSchema: { type: "object" } },
        ],
      },
      new AbortController().signal,
    );
    for await (const event of stream) events.push(event);
    return events;
  }

  const ticket =
    '<tool_call>{"name": "jira__create_issue", "arguments": {"title": "Login broken"}}</tool_call>';

  it("runs no call the model drafted in its <think> reasoning, only the one it wrote after", async () => {
    const reasoning = `<think>The user wants a ticket. I should respond with ${ticket} and then wait.</think>`;
    const events = await textProtocolEvents("deepseek-chat-local", `${reasoning}\n${ticket}`);
    expect(callsOf(events)).toEqual([{ name: "jira__create_issue", arguments: { title: "Login broken" } }]);
    // The reasoning goes on as it was written, for the step to hide.
    expect(textOf(events)).toBe(`${reasoning}\n`);
    expect(events.at(-1)).toEqual({ type: "stop", reason: "tool_calls" });
  });

  it("runs no call drafted in reasoning that the chat template opened, ended by a lone </think>", async () => {
    const reasoning = `The user wants a ticket. I could write ${ticket}, so I will.</think>`;
    const events = await textProtocolEvents("qwq-32b", `${reasoning}\n\n${ticket}`);
    expect(callsOf(events)).toEqual([{ name: "jira__create_issue", arguments: { title: "Login broken" } }]);
    expect(textOf(events)).toBe(`${reasoning}\n\n`);
  });

  it("gives a drafted call no answer to become when the reasoning never ends", async () => {
    const events = await textProtocolEvents("deepseek-chat-local", `<think>Maybe ${ticket} later`);
    expect(callsOf(events)).toEqual([]);
    expect(events.at(-1)).toEqual({ type: "stop", reason: "end" });
  });

  it("keeps the content filter's stop for an answer that wrote a call, so that the call is not run", async () => {
    const events = await textProtocolEvents("qwen-local", `Filing it.\n${ticket}`, { contentFilter: true });
    expect(events.at(-1)).toEqual({ type: "stop", reason: "filtered" });
  });
});
