import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { demoResponder, LlmEmulator } from "./index.js";

let emu: LlmEmulator;
beforeAll(async () => {
  emu = await LlmEmulator.start();
});
afterEach(() => emu.reset());
afterAll(() => emu.close());

const openai = (opts: ConstructorParameters<typeof OpenAI>[0] = {}) =>
  new OpenAI({ apiKey: "sk-test-key", baseURL: emu.openaiBaseUrl, maxRetries: 0, ...opts });
const anthropic = (opts: ConstructorParameters<typeof Anthropic>[0] = {}) =>
  new Anthropic({ apiKey: "sk-ant-test-key", baseURL: emu.anthropicBaseUrl, maxRetries: 0, ...opts });

const user = (content: string) => [{ role: "user" as const, content }];
const weatherTool = {
  name: "weather__get",
  description: "Weather",
  input_schema: { type: "object" as const },
};
/** An OpenAI function tool. */
const fn = (name: string, parameters: Record<string, unknown>) => ({
  type: "function" as const,
  function: { name, parameters },
});
const scriptedCalls = [
  { name: "weather__get", arguments: { city: "Paris", days: [1, 2, 3], metric: true } },
  { name: "search__find", arguments: { query: "umbrellas near the Louvre" } },
];

describe("OpenAI Chat Completions", () => {
  it("streams the scripted text in several pieces that join to exactly the script", async () => {
    emu.enqueue({ text: "Hello there, this answer arrives in pieces.", chunkSize: 5 });
    const stream = await openai().chat.completions.create({
      model: "gpt-4o",
      messages: user("hi"),
      stream: true,
    });
    const pieces: string[] = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) pieces.push(chunk.choices[0].delta.content);
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join("")).toBe("Hello there, this answer arrives in pieces.");
    expect(finish).toBe("stop");
  });

  it("streams text first, then tool calls whose argument pieces reassemble to the scripted JSON", async () => {
    emu.enqueue({ text: "Checking.", toolCalls: scriptedCalls });
    const stream = await openai().chat.completions.create({
      model: "gpt-4o",
      messages: user("go"),
      tools: scriptedCalls.map((c) => fn(c.name, { type: "object" })),
      stream: true,
    });
    const calls: Array<{ id: string; name: string; args: string; pieces: number }> = [];
    const order: string[] = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta;
      if (delta?.content) order.push("text");
      for (const tc of delta?.tool_calls ?? []) {
        order.push("tool");
        calls[tc.index] ??= { id: tc.id ?? "", name: tc.function?.name ?? "", args: "", pieces: 0 };
        const call = calls[tc.index]!;
        if (tc.function?.arguments) {
          call.args += tc.function.arguments;
          call.pieces++;
        }
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(order.indexOf("tool")).toBeGreaterThan(order.lastIndexOf("text"));
    expect(calls.map((c) => c.name)).toEqual(["weather__get", "search__find"]);
    expect(calls.map((c) => JSON.parse(c.args))).toEqual(scriptedCalls.map((c) => c.arguments));
    expect(calls.every((c) => c.pieces > 1 && c.id.startsWith("call_"))).toBe(true);
    expect(calls[0]?.id).not.toBe(calls[1]?.id);
    expect(finish).toBe("tool_calls");
  });

  it("reports usage in a final chunk when include_usage is set, and in every plain response", async () => {
    emu.enqueue({ text: "counted", usage: { input: 12, output: 34 } }, { text: "estimated" });
    const stream = await openai().chat.completions.create({
      model: "gpt-4o",
      messages: user("hi"),
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.at(-1)?.choices).toEqual([]);
    expect(chunks.at(-1)?.usage).toMatchObject({
      prompt_tokens: 12,
      completion_tokens: 34,
      total_tokens: 46,
    });
    const plain = await openai().chat.completions.create({ model: "gpt-4o", messages: user("hi") });
    expect(plain.usage?.prompt_tokens).toBeGreaterThan(0);
    expect(plain.usage?.completion_tokens).toBeGreaterThan(0);
  });

  it("echoes the last user message when nothing is scripted, and the SDK's stream helper accepts it", async () => {
    const messages = [...user("first"), { role: "assistant" as const, content: "ok" }, ...user("second")];
    const plain = await openai().chat.completions.create({ model: "gpt-4o", messages });
    expect(plain.choices[0]?.message.content).toBe("You said: second");
    expect(plain.choices[0]?.finish_reason).toBe("stop");
    const final = await openai().chat.completions.stream({ model: "gpt-4o", messages }).finalChatCompletion();
    expect(final.choices[0]?.message.content).toBe("You said: second");
  });

  it("records model, system, raw messages, tool names and headers of each request", async () => {
    const messages = [
      { role: "system" as const, content: "Be brief." },
      { role: "user" as const, content: [{ type: "text" as const, text: "hello" }] },
    ];
    const tools = [
      { type: "function" as const, function: { name: "files__read", parameters: { type: "object" } } },
    ];
    await openai().chat.completions.create({ model: "gpt-4o-mini", messages, tools });
    expect(emu.requests).toHaveLength(1);
    expect(emu.requests[0]).toMatchObject({
      protocol: "openai",
      model: "gpt-4o-mini",
      stream: false,
      system: "Be brief.",
      messages,
      toolNames: ["files__read"],
    });
    expect(emu.requests[0]?.headers.authorization).toBe("Bearer sk-test-key");
  });

  it("sends a scripted malformed arguments string exactly as given", async () => {
    emu.enqueue({ toolCalls: [{ name: "weather__get", arguments: '{"city": "Par', id: "call_fixed" }] });
    const res = await openai().chat.completions.create({
      model: "gpt-4o",
      messages: user("go"),
      tools: [fn("weather__get", { type: "object" })],
    });
    const call = res.choices[0]?.message.tool_calls?.[0];
    expect(call).toMatchObject({
      id: "call_fixed",
      function: { name: "weather__get", arguments: '{"city": "Par' },
    });
    expect(res.choices[0]?.message.content).toBeNull();
  });

  it("lists models", async () => {
    const page = await openai().models.list();
    expect(page.data.map((m) => m.id)).toContain("gpt-4o");
  });
});

describe("Anthropic Messages", () => {
  it("streams text deltas in several pieces between message_start and message_stop", async () => {
    emu.enqueue({ text: "Bonjour, this answer arrives in pieces.", chunkSize: 6 });
    const stream = await anthropic().messages.create({
      model: "claude-sonnet-5-5",
      max_tokens: 100,
      messages: user("hi"),
      stream: true,
    });
    const types: string[] = [];
    const pieces: string[] = [];
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === "content_block_delta" && ev.delta.type === "text_delta") pieces.push(ev.delta.text);
    }
    expect(types[0]).toBe("message_start");
    expect(types.slice(-2)).toEqual(["message_delta", "message_stop"]);
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join("")).toBe("Bonjour, this answer arrives in pieces.");
  });

  it("streams tool_use blocks whose input_json_delta pieces reassemble to the scripted JSON", async () => {
    emu.enqueue({ text: "Checking.", toolCalls: scriptedCalls });
    const stream = anthropic().messages.stream({
      model: "claude-sonnet-5-5",
      max_tokens: 100,
      messages: user("go"),
      tools: [weatherTool],
    });
    const firstToolJson: string[] = [];
    stream.on("streamEvent", (ev) => {
      if (ev.type === "content_block_delta" && ev.delta.type === "input_json_delta" && ev.index === 1) {
        firstToolJson.push(ev.delta.partial_json);
      }
    });
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe("tool_use");
    expect(message.content.map((b) => b.type)).toEqual(["text", "tool_use", "tool_use"]);
    const uses = message.content.filter((b) => b.type === "tool_use");
    expect(uses.map((b) => b.input)).toEqual(scriptedCalls.map((c) => c.arguments));
    expect(uses.every((b) => b.id.startsWith("toolu_"))).toBe(true);
    expect(uses[0]?.id).not.toBe(uses[1]?.id);
    expect(firstToolJson.filter(Boolean).length).toBeGreaterThan(1);
    expect(JSON.parse(firstToolJson.join(""))).toEqual(scriptedCalls[0]?.arguments);
  });

  it("reports input tokens in message_start and output tokens in message_delta", async () => {
    emu.enqueue({ text: "counted", usage: { input: 21, output: 43 } });
    const stream = await anthropic().messages.create({
      model: "claude-sonnet-5-5",
      max_tokens: 100,
      messages: user("hi"),
      stream: true,
    });
    let input = 0;
    let output = 0;
    for await (const ev of stream) {
      if (ev.type === "message_start") input = ev.message.usage.input_tokens;
      if (ev.type === "message_delta") output = ev.usage.output_tokens;
    }
    expect({ input, output }).toEqual({ input: 21, output: 43 });
  });

  it("echoes the last user text, skipping tool-result turns, and records system blocks joined", async () => {
    const res = await anthropic().messages.create({
      model: "claude-haiku-5-5",
      max_tokens: 100,
      system: [
        { type: "text", text: "Be brief." },
        { type: "text", text: "Be kind." },
      ],
      tools: [weatherTool],
      messages: [
        ...user("what is the weather?"),
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "toolu_1", name: "weather__get", input: {} }],
        },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "sunny" }] },
      ],
    });
    expect(res.content).toEqual([{ type: "text", text: "You said: what is the weather?" }]);
    expect(res.stop_reason).toBe("end_turn");
    expect(res.usage.input_tokens).toBeGreaterThan(0);
    expect(emu.requests[0]).toMatchObject({
      protocol: "anthropic",
      model: "claude-haiku-5-5",
      system: "Be brief.\nBe kind.",
      toolNames: ["weather__get"],
    });
    expect(emu.requests[0]?.messages).toHaveLength(3);
  });

  it("lists models", async () => {
    const page = await anthropic().models.list();
    expect(page.data.map((m) => m.id)).toContain("claude-sonnet-5-5");
  });
});

describe("failures", () => {
  it("lets both SDKs retry two 429s and then succeed", async () => {
    const rateLimited = { error: { status: 429, retryAfter: 0 } };
    emu.enqueue(rateLimited, rateLimited, { text: "finally" });
    const a = await openai({ maxRetries: 2 }).chat.completions.create({
      model: "gpt-4o",
      messages: user("x"),
    });
    expect(a.choices[0]?.message.content).toBe("finally");
    expect(emu.requests).toHaveLength(3);

    emu.enqueue(rateLimited, rateLimited, { text: "finally" });
    const b = await anthropic({ maxRetries: 2 }).messages.create({
      model: "claude-sonnet-5-5",
      max_tokens: 10,
      messages: user("x"),
    });
    expect(b.content).toEqual([{ type: "text", text: "finally" }]);
    expect(emu.requests).toHaveLength(6);
  });

  it("sends a 429 in each protocol's error shape with retry-after", async () => {
    emu.enqueue({ error: { status: 429, retryAfter: 7, message: "slow down" } });
    const err = await openai()
      .chat.completions.create({ model: "gpt-4o", messages: user("x") })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).headers.get("retry-after")).toBe("7");
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).error).toMatchObject({
      message: "slow down",
      code: "rate_limit_exceeded",
    });

    emu.enqueue({ error: { status: 429, retryAfter: 7 } });
    const res = await fetch(`${emu.anthropicBaseUrl}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": "k", "content-type": "application/json" },
      body: JSON.stringify({ model: "m", max_tokens: 1, messages: user("x") }),
    });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("7");
    expect(await res.json()).toMatchObject({ type: "error", error: { type: "rate_limit_error" } });
  });

  it("surfaces 500 and 529 as API errors of the right type", async () => {
    emu.enqueue({ error: { status: 500 } }, { error: { status: 529 } }, { error: { status: 500 } });
    const params = { model: "claude-sonnet-5-5", max_tokens: 10, messages: user("x") };
    const e500 = await anthropic()
      .messages.create(params)
      .catch((e: unknown) => e);
    const e529 = await anthropic()
      .messages.create(params)
      .catch((e: unknown) => e);
    expect(e500).toMatchObject({ status: 500, type: "api_error" });
    expect(e529).toMatchObject({ status: 529, type: "overloaded_error" });
    const o500 = await openai()
      .chat.completions.create({ model: "gpt-4o", messages: user("x") })
      .catch((e: unknown) => e);
    expect(o500).toBeInstanceOf(OpenAI.InternalServerError);
  });

  it("does not let the SDKs retry a 400", async () => {
    emu.enqueue({ error: { status: 400, message: "bad tool schema" } }, { text: "never sent" });
    const err = await openai({ maxRetries: 2 })
      .chat.completions.create({ model: "gpt-4o", messages: user("x") })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(emu.requests).toHaveLength(1);
  });

  it("breaks the SDK's stream iteration when the connection is cut mid-answer", async () => {
    const cut = { cut: { afterChars: 10, text: "This answer is cut short here." } };
    emu.enqueue(cut, cut);
    const received: string[] = [];
    const o = await openai().chat.completions.create({ model: "gpt-4o", messages: user("x"), stream: true });
    const readOpenAi = async () => {
      for await (const c of o) received.push(c.choices[0]?.delta.content ?? "");
    };
    await expect(readOpenAi()).rejects.toThrow();
    expect(received.join("")).toBe("This answer is cut short here.".slice(0, 10));

    const a = await anthropic().messages.create({
      model: "claude-sonnet-5-5",
      max_tokens: 10,
      messages: user("x"),
      stream: true,
    });
    const readAnthropic = async () => {
      for await (const _ of a) {
      }
    };
    await expect(readAnthropic()).rejects.toThrow();
  });

  it("rejects a request without a key with 401 in each protocol's shape", async () => {
    const noKey = { defaultHeaders: { Authorization: null } };
    const o = await openai(noKey)
      .chat.completions.create({ model: "gpt-4o", messages: user("x") })
      .catch((e: unknown) => e);
    expect(o).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(o).toMatchObject({ status: 401, code: "invalid_api_key" });
    const a = await anthropic(noKey)
      .messages.create({ model: "claude-sonnet-5-5", max_tokens: 10, messages: user("x") })
      .catch((e: unknown) => e);
    expect(a).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(a).toMatchObject({ status: 401, type: "authentication_error" });
    expect(emu.requests).toHaveLength(0);
  });
});

describe("demo responder", () => {
  it("calls the tool the user names and then reports the tool's result", async () => {
    emu.setResponder(demoResponder);
    const client = openai();
    const tools = [{ type: "function" as const, function: { name: "everything__echo", parameters: {} } }];
    const ask = [...user('use tool echo {"message": "ping"}')];
    const first = await client.chat.completions.create({ model: "gpt-4o", messages: ask, tools });
    const call = first.choices[0]?.message.tool_calls?.[0];
    expect(call?.type === "function" && call.function).toEqual({
      name: "everything__echo",
      arguments: '{"message":"ping"}',
    });
    const second = await client.chat.completions.create({
      model: "gpt-4o",
      tools,
      messages: [
        ...ask,
        { role: "assistant", content: null, tool_calls: first.choices[0]?.message.tool_calls ?? [] },
        { role: "tool", tool_call_id: call?.id ?? "", content: "Echo: ping" },
      ],
    });
    expect(second.choices[0]?.message.content).toBe("Tool said: Echo: ping");
  });

  it("answers a request that offers no tools (a summary quoting a tool request) with text", async () => {
    emu.setResponder(demoResponder);
    const res = await openai().chat.completions.create({
      model: "gpt-4o",
      messages: user('<new_messages>\nuser: use tool echo {"message": "ping"}\n</new_messages>'),
    });
    expect(res.choices[0]?.message.tool_calls).toBeUndefined();
    expect(res.choices[0]?.message.content).toContain("You said:");
  });
});

describe("tool calls only where tools are offered", () => {
  it("refuses to play a scripted tool call to a request without tools, loudly, on both APIs", async () => {
    emu.enqueue({ toolCalls: scriptedCalls });
    await expect(
      openai().chat.completions.create({ model: "gpt-4o", messages: user("go") }),
    ).rejects.toMatchObject({
      status: 500,
      message: expect.stringContaining(
        "scripted a call of weather__get, search__find, but the request offers no tools",
      ),
    });
    emu.enqueue({ toolCalls: scriptedCalls });
    await expect(
      anthropic().messages.create({ model: "claude-sonnet-4-5", max_tokens: 100, messages: user("go") }),
    ).rejects.toMatchObject({ status: 500, message: expect.stringContaining("the request offers no tools") });
  });
});

describe("context windows, as strict as the providers", () => {
  const started: LlmEmulator[] = [];
  afterEach(async () => {
    for (const e of started.splice(0)) await e.close();
  });
  async function strict(contextWindows: Record<string, number>): Promise<LlmEmulator> {
    const e = await LlmEmulator.start({ contextWindows });
    started.push(e);
    return e;
  }
  const WORDS = ["the", "deploy", "failed", "again", "because", "memory", "was", "low"];
  /** About one o200k token a word. */
  const prose = (words: number) => Array.from({ length: words }, (_, i) => WORDS[i % WORDS.length]).join(" ");

  it("refuses an OpenAI prompt longer than the model's window with 400 context_length_exceeded", async () => {
    const e = await strict({ "gpt-4o": 1_000 });
    e.enqueue({ text: "kept for the next request" });
    const client = new OpenAI({ apiKey: "k", baseURL: e.openaiBaseUrl, maxRetries: 2 });
    // A naive client: sends the whole long conversation as it is.
    const err = await client.chat.completions
      .create({ model: "gpt-4o", messages: user(prose(2_000)) })
      .catch((x: unknown) => x);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err).toMatchObject({ status: 400, code: "context_length_exceeded", param: "messages" });
    expect((err as Error).message).toMatch(
      /maximum context length is 1000 tokens\. However, your messages resulted in \d+ tokens/,
    );
    // Not retried (a 400), and no scripted turn was spent on it.
    expect(e.requests).toHaveLength(1);
    expect(e.requests[0]?.promptTokens).toBeGreaterThan(1_000);
    expect(e.requests[0]?.overflow).toContain("maximum context length");
    const ok = await client.chat.completions.create({ model: "gpt-4o", messages: user("short") });
    expect(ok.choices[0]?.message.content).toBe("kept for the next request");
  });

  it("refuses an Anthropic conversation that opens with the assistant, as the API does", async () => {
    const err = await anthropic()
      .messages.create({
        model: "claude-sonnet-5-5",
        max_tokens: 100,
        messages: [
          { role: "assistant", content: "Done: the file is written." },
          { role: "user", content: "thanks" },
        ],
      })
      .catch((x: unknown) => x);
    expect(err).toMatchObject({ status: 400, type: "invalid_request_error" });
    expect((err as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
      error: { message: 'messages: first message must use the "user" role' },
    });
  });

  it("stops an answer at the output the request allows, with each API's reason", async () => {
    const long = "word ".repeat(200);
    emu.enqueue({ text: long });
    const o = await openai().chat.completions.create({
      model: "gpt-4o",
      messages: user("tell me a lot"),
      max_completion_tokens: 20,
    });
    expect(o.choices[0]).toMatchObject({ finish_reason: "length", message: { content: long.slice(0, 80) } });
    expect(o.usage?.completion_tokens).toBe(20);
    emu.enqueue({ text: long, toolCalls: [{ name: "weather__get", arguments: {} }] });
    const chunks: string[] = [];
    let stop: string | null = null;
    const stream = await anthropic().messages.create({
      model: "claude-sonnet-5-5",
      max_tokens: 20,
      messages: user("tell me a lot"),
      tools: [weatherTool],
      stream: true,
    });
    for await (const event of stream) {
      if (event.type === "content_block_delta" && event.delta.type === "text_delta")
        chunks.push(event.delta.text);
      if (event.type === "content_block_start") expect(event.content_block.type).toBe("text");
      if (event.type === "message_delta") stop = event.delta.stop_reason;
    }
    expect(chunks.join("")).toBe(long.slice(0, 80));
    expect(stop).toBe("max_tokens");
  });

  it("refuses tools the real APIs refuse: an array without items (OpenAI), a name outside the pattern (both)", async () => {
    const nested = {
      type: "object",
      properties: {
        filter: { type: "object", properties: { tags: { type: "array", description: "tags" } } },
      },
    };
    const refused = await openai()
      .chat.completions.create({
        model: "gpt-4o",
        messages: user("hi"),
        tools: [fn("ok", {}), fn("k8s__exec", nested)],
      })
      .catch((x: unknown) => x);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect(refused).toMatchObject({
      status: 400,
      code: "invalid_function_parameters",
      param: "tools[1].function.parameters",
    });
    expect((refused as Error).message).toContain(
      "Invalid schema for function 'k8s__exec': In context=('properties', 'filter', 'properties', 'tags'), array schema missing items.",
    );
    // A type list that allows an array needs items too; with them both pass.
    const union = { type: "object", properties: { x: { type: ["string", "array"] } } };
    await expect(
      openai().chat.completions.create({ model: "gpt-4o", messages: user("hi"), tools: [fn("u", union)] }),
    ).rejects.toThrow("In context=('properties', 'x', 'type', '1'), array schema missing items.");
    emu.enqueue({ text: "fine" });
    const withItems = { type: "object", properties: { x: { type: ["string", "array"], items: {} } } };
    const ok = await openai().chat.completions.create({
      model: "gpt-4o",
      messages: user("hi"),
      tools: [fn("u", withItems)],
    });
    expect(ok.choices[0]?.message.content).toBe("fine");
    await expect(
      openai().chat.completions.create({
        model: "gpt-4o",
        messages: user("hi"),
        tools: [fn("files.read", {})],
      }),
    ).rejects.toMatchObject({ status: 400, code: "invalid_value", param: "tools[0].function.name" });
    await expect(
      openai().chat.completions.create({
        model: "gpt-4o",
        messages: user("hi"),
        tools: [fn("x".repeat(65), {})],
      }),
    ).rejects.toMatchObject({ status: 400, code: "string_above_max_length" });
    // Anthropic takes an array without items, not a name with a dot.
    emu.enqueue({ text: "fine" });
    const a = await anthropic().messages.create({
      model: "claude-sonnet-4-5",
      max_tokens: 100,
      messages: user("hi"),
      tools: [{ name: "k8s__exec", input_schema: nested as Anthropic.Tool.InputSchema }],
    });
    expect(a.content[0]).toMatchObject({ type: "text", text: "fine" });
    await expect(
      anthropic().messages.create({
        model: "claude-sonnet-4-5",
        max_tokens: 100,
        messages: user("hi"),
        tools: [{ ...weatherTool, name: "weather.get" }],
      }),
    ).rejects.toMatchObject({ status: 400, type: "invalid_request_error" });
  });

  it("refuses an Anthropic prompt longer than the model's window with 400 invalid_request_error 'prompt is too long'", async () => {
    const e = await strict({ "claude-sonnet-5-5": 1_000 });
    const client = new Anthropic({ apiKey: "k", baseURL: e.anthropicBaseUrl, maxRetries: 2 });
    const err = await client.messages
      .create({ model: "claude-sonnet-5-5", max_tokens: 100, messages: user(prose(2_000)) })
      .catch((x: unknown) => x);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err).toMatchObject({ status: 400, type: "invalid_request_error" });
    expect((err as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
      type: "error",
      error: {
        type: "invalid_request_error",
        message: expect.stringMatching(/^prompt is too long: \d+ tokens > 1000 maximum$/),
      },
    });
    expect(e.requests).toHaveLength(1);
  });

  it("refuses a prompt that fits only without the output it asks for, in each provider's words", async () => {
    const e = await strict({ "gpt-4o": 1_000, "claude-haiku-5-5": 1_000 });
    const messages = user(prose(300));
    const o = await new OpenAI({ apiKey: "k", baseURL: e.openaiBaseUrl, maxRetries: 0 }).chat.completions
      .create({ model: "gpt-4o", messages, max_completion_tokens: 900 })
      .catch((x: unknown) => x);
    expect(o).toMatchObject({ status: 400, code: "context_length_exceeded" });
    expect((o as Error).message).toMatch(
      /you requested \d+ tokens \(\d+ in the messages, 900 in the completion\)/,
    );
    const a = await new Anthropic({ apiKey: "k", baseURL: e.anthropicBaseUrl, maxRetries: 0 }).messages
      .create({ model: "claude-haiku-5-5", max_tokens: 900, messages })
      .catch((x: unknown) => x);
    expect(a).toMatchObject({ status: 400, type: "invalid_request_error" });
    expect((a as Error).message).toMatch(
      /input length and `max_tokens` exceed context limit: \d+ \+ 900 > 1000/,
    );
    // With room for the answer both go through.
    await new OpenAI({ apiKey: "k", baseURL: e.openaiBaseUrl, maxRetries: 0 }).chat.completions.create({
      model: "gpt-4o",
      messages,
      max_completion_tokens: 100,
    });
    expect(e.requests.map((r) => r.overflow === undefined)).toEqual([false, false, true]);
  });

  it("counts the prompt on its own (system, messages, tools) and holds it to the exact window", async () => {
    const e = await strict({});
    const client = new OpenAI({ apiKey: "k", baseURL: e.openaiBaseUrl, maxRetries: 0 });
    const body = {
      model: "gpt-4o-mini",
      messages: [{ role: "system" as const, content: "Be brief." }, ...user(prose(200))],
      tools: [
        { type: "function" as const, function: { name: "files__read", parameters: { type: "object" } } },
      ],
    };
    await client.chat.completions.create(body);
    const counted = e.requests[0]?.promptTokens ?? 0;
    // o200k for the text, plus framing: more than the bare user text, and a real count, not a byte count.
    expect(counted).toBeGreaterThan(200);
    expect(counted).toBeLessThan(JSON.stringify(body).length / 4);
    e.setContextWindow("gpt-4o-mini", counted);
    await expect(client.chat.completions.create(body)).resolves.toBeDefined();
    e.setContextWindow("gpt-4o-mini", counted - 1);
    await expect(client.chat.completions.create(body)).rejects.toMatchObject({
      code: "context_length_exceeded",
    });
  });

  it("holds gpt-4o to 128k tokens by default", async () => {
    const e = await strict({});
    const client = new OpenAI({ apiKey: "k", baseURL: e.openaiBaseUrl, maxRetries: 0 });
    await expect(
      client.chat.completions.create({ model: "gpt-4o", messages: user(prose(140_000)) }),
    ).rejects.toMatchObject({ status: 400, code: "context_length_exceeded" });
    expect(e.requests[0]?.contextWindow).toBe(128_000);
  });
});
