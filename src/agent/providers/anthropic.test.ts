import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../core/messages.js";
import { DEFAULT_MAX_TOKENS } from "./anthropic.js";
import { EMPTY_TOOL_RESULT } from "./anthropic-messages.js";
import { emulatedProvider, sentBody, useLlmEmulator } from "./emulator-setup.test-helper.js";
import type { ModelRequest } from "./provider.js";

const emulator = useLlmEmulator();

const send = (req: ModelRequest) =>
  sentBody(emulator(), emulatedProvider(emulator(), "anthropic", { apiKey: "sk-ant-test-key" }), req);

const history: ChatMessage[] = [
  {
    role: "user",
    content: "What is in this picture and in /etc/hosts?",
    author: "Ada",
    parts: [{ type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" }],
  },
  {
    role: "assistant",
    content: "Let me look.",
    toolCalls: [
      { id: "toolu_1", name: "fs__read_file", arguments: { path: "/etc/hosts" } },
      { id: "toolu_2", name: "fs__stat", arguments: { path: "/nope" } },
    ],
  },
  { role: "tool", toolCallId: "toolu_1", name: "fs__read_file", content: "127.0.0.1 localhost" },
  { role: "tool", toolCallId: "toolu_2", name: "fs__stat", content: "ENOENT", isError: true },
  { role: "user", content: "And also: which port?", author: "Grace" },
];

describe("the Anthropic provider's wire format", () => {
  it("sends tool results as tool_result blocks merged into one user message with the next question", async () => {
    const tools = ["fs__read_file", "fs__stat"].map((name) => ({
      name,
      description: "",
      inputSchema: { type: "object" },
    }));
    const body = await send({ model: "claude-haiku-5-5", system: "Be brief.", messages: history, tools });
    expect(body.system).toBe("Be brief.");
    expect(body.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "[Ada] What is in this picture and in /etc/hosts?" },
          { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
        ],
      },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Let me look." },
          { type: "tool_use", id: "toolu_1", name: "fs__read_file", input: { path: "/etc/hosts" } },
          { type: "tool_use", id: "toolu_2", name: "fs__stat", input: { path: "/nope" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: "127.0.0.1 localhost" },
          { type: "tool_result", tool_use_id: "toolu_2", content: "ENOENT", is_error: true },
          { type: "text", text: "[Grace] And also: which port?" },
        ],
      },
    ]);
  });

  it("sends earlier tool calls and results as text when no tools are offered (the API refuses tool blocks then)", async () => {
    const body = await send({ model: "claude-haiku-5-5", system: "Be brief.", messages: history, tools: [] });
    expect(body).not.toHaveProperty("tools");
    expect(body.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "[Ada] What is in this picture and in /etc/hosts?" },
          { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
        ],
      },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Let me look." },
          { type: "text", text: '[Earlier tool call: fs__read_file {"path":"/etc/hosts"}]' },
          { type: "text", text: '[Earlier tool call: fs__stat {"path":"/nope"}]' },
        ],
      },
      {
        role: "user",
        content: [
          { type: "text", text: "[Result of fs__read_file: 127.0.0.1 localhost]" },
          { type: "text", text: "[fs__stat failed: ENOENT]" },
          { type: "text", text: "[Grace] And also: which port?" },
        ],
      },
    ]);
  });

  it("leaves out text that is only whitespace, which the API refuses, in the answers and the questions", async () => {
    const body = await send({
      model: "claude-haiku-5-5",
      system: "",
      messages: [
        { role: "user", content: "Think it over." },
        { role: "assistant", content: "\n\n" },
        { role: "user", content: " \n", parts: [{ type: "text", text: "\t" }] },
        { role: "user", content: "Well?" },
      ],
      tools: [],
    });
    expect(body.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "Think it over." },
          { type: "text", text: "Well?" },
        ],
      },
    ]);
  });

  it("merges consecutive user messages so that roles alternate", async () => {
    const body = await send({
      model: "claude-haiku-5-5",
      system: "",
      messages: [
        { role: "user", content: "first" },
        { role: "user", content: "second" },
      ],
      tools: [],
    });
    expect(body.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "first" },
          { type: "text", text: "second" },
        ],
      },
    ]);
    expect(body).not.toHaveProperty("system");
  });

  it("always sends max_tokens, 4096 unless told otherwise, and tools with input_schema", async () => {
    const schema = { type: "object", properties: { q: { type: "string" } } };
    const tools = [{ name: "web__search", description: "Search the web.", inputSchema: schema }];
    const messages: ChatMessage[] = [{ role: "user", content: "search" }];
    const plain = await send({ model: "claude-haiku-5-5", system: "s", messages, tools });
    expect(plain.max_tokens).toBe(DEFAULT_MAX_TOKENS);
    expect(DEFAULT_MAX_TOKENS).toBe(4096);
    expect(plain.tools).toEqual([
      { name: "web__search", description: "Search the web.", input_schema: schema },
    ]);
    const capped = await send({
      model: "claude-haiku-5-5",
      system: "s",
      messages,
      tools,
      maxOutputTokens: 512,
    });
    expect(capped.max_tokens).toBe(512);
    expect(capped).not.toHaveProperty("tool_choice");
  });

  it("sends a tool result that is empty or only whitespace as a placeholder the API takes", async () => {
    const tools = [{ name: "shell__run", description: "", inputSchema: { type: "object" } }];
    const call = (id: string) => ({ id, name: "shell__run", arguments: {} });
    const messages: ChatMessage[] = [
      { role: "user", content: "run both" },
      { role: "assistant", content: "", toolCalls: [call("toolu_a"), call("toolu_b")] },
      // An MCP tool whose whole output is a newline, and a failure that said nothing.
      { role: "tool", toolCallId: "toolu_a", name: "shell__run", content: "\n" },
      { role: "tool", toolCallId: "toolu_b", name: "shell__run", content: "", isError: true },
    ];
    const body = await send({ model: "claude-haiku-5-5", system: "s", messages, tools });
    expect((body.messages as Array<{ content: unknown }>)[2]?.content).toEqual([
      { type: "tool_result", tool_use_id: "toolu_a", content: EMPTY_TOOL_RESULT },
      { type: "tool_result", tool_use_id: "toolu_b", content: EMPTY_TOOL_RESULT, is_error: true },
    ]);
  });

  it("asks for an answer without tool calls with tool_choice none, keeping the tools listed", async () => {
    const tools = [{ name: "web__search", description: "Search.", inputSchema: { type: "object" } }];
    const body = await send({
      model: "claude-haiku-5-5",
      system: "",
      messages: [{ role: "user", content: "sum up" }],
      tools,
      toolChoice: "none",
    });
    expect(body.tool_choice).toEqual({ type: "none" });
    expect((body.tools as unknown[]).length).toBe(1);
  });
});
