import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../core/messages.js";
import { emulatedProvider, sentBody, useLlmEmulator } from "./emulator-setup.test-helper.js";
import type { ModelRequest } from "./provider.js";

const emulator = useLlmEmulator();

const send = (req: ModelRequest) =>
  sentBody(emulator(), emulatedProvider(emulator(), "openai", { apiKey: "sk-test-openai" }), req);

const history: ChatMessage[] = [
  {
    role: "user",
    content: "What is in this picture and in /etc/hosts?",
    author: "Ada Lovelace",
    parts: [{ type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" }],
  },
  {
    role: "assistant",
    content: "",
    toolCalls: [
      { id: "call_1", name: "fs__read_file", arguments: { path: "/etc/hosts" } },
      { id: "call_2", name: "fs__stat", arguments: {}, invalidArguments: "{path" },
    ],
  },
  { role: "tool", toolCallId: "call_1", name: "fs__read_file", content: "127.0.0.1 localhost" },
  { role: "tool", toolCallId: "call_2", name: "fs__stat", content: "arguments were not JSON", isError: true },
  { role: "assistant", content: "A cat, and a hosts file with localhost." },
  { role: "user", content: "Thanks!" },
];

describe("the OpenAI provider's wire format", () => {
  it("sends a multi-turn history with tool calls and results in Chat Completions shape", async () => {
    const body = await send({ model: "gpt-4o-mini", system: "Be brief.", messages: history, tools: [] });
    expect(body.messages).toEqual([
      { role: "system", content: "Be brief." },
      {
        role: "user",
        content: [
          { type: "text", text: "[Ada Lovelace] What is in this picture and in /etc/hosts?" },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
        ],
      },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_1",
            type: "function",
            function: { name: "fs__read_file", arguments: '{"path":"/etc/hosts"}' },
          },
          { id: "call_2", type: "function", function: { name: "fs__stat", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "127.0.0.1 localhost" },
      { role: "tool", tool_call_id: "call_2", content: "Error: arguments were not JSON" },
      { role: "assistant", content: "A cat, and a hosts file with localhost." },
      { role: "user", content: "Thanks!" },
    ]);
  });

  it("offers tools as functions and asks for streamed usage", async () => {
    const schema = { type: "object", properties: { q: { type: "string" } }, required: ["q"] };
    const body = await send({
      model: "gpt-4o-mini",
      system: "",
      messages: [{ role: "user", content: "search" }],
      tools: [{ name: "web__search", description: "Search the web.", inputSchema: schema }],
      maxOutputTokens: 300,
      temperature: 0.2,
    });
    expect(body.tools).toEqual([
      {
        type: "function",
        function: { name: "web__search", description: "Search the web.", parameters: schema },
      },
    ]);
    expect(body.stream).toBe(true);
    expect(body.stream_options).toEqual({ include_usage: true });
    expect(body.max_tokens).toBe(300);
    expect(body.temperature).toBe(0.2);
    expect((body.messages as Array<{ role: string }>)[0]?.role).toBe("user");
  });

  it("asks for an answer without tool calls with tool_choice none, only when tools are listed", async () => {
    const tools = [{ name: "web__search", description: "Search.", inputSchema: { type: "object" } }];
    const messages: ChatMessage[] = [{ role: "user", content: "sum up" }];
    const withTools = await send({ model: "m", system: "", messages, tools, toolChoice: "none" });
    expect(withTools.tool_choice).toBe("none");
    const without = await send({ model: "m", system: "", messages, tools: [], toolChoice: "none" });
    expect(without).not.toHaveProperty("tool_choice");
  });

  it("sends no tools field when there are no tools", async () => {
    const body = await send({
      model: "m",
      system: "s",
      messages: [{ role: "user", content: "hi" }],
      tools: [],
    });
    expect(body).not.toHaveProperty("tools");
    expect(body).not.toHaveProperty("max_tokens");
  });
});
