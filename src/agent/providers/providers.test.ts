import { type AddressInfo, createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { SwitchboardError } from "../../core/errors.js";
import { AnthropicProvider } from "./anthropic.js";
import { emulatedProvider, useLlmEmulator } from "./emulator-setup.test-helper.js";
import { OpenAIProvider } from "./openai.js";
import type { ModelEvent, ModelRequest, Provider } from "./provider.js";

const API_KEY = "sk-test-0123456789abcdef";

const emulator = useLlmEmulator();

interface Outcome {
  events: ModelEvent[];
  error?: SwitchboardError;
}

/** Drains a stream; a thrown error is returned beside the events that came before it. */
async function run(
  provider: Provider,
  req: ModelRequest,
  signal = new AbortController().signal,
): Promise<Outcome> {
  const events: ModelEvent[] = [];
  try {
    for await (const event of provider.stream(req, signal)) events.push(event);
  } catch (err) {
    if (!(err instanceof SwitchboardError)) throw err;
    return { events, error: err };
  }
  return { events };
}

const textOf = (events: ModelEvent[]) => events.map((e) => (e.type === "text" ? e.delta : "")).join("");

const kinds = [
  {
    name: "openai",
    model: "gpt-4o-mini",
    make: (maxRetries = 3) => emulatedProvider(emulator(), "openai", { apiKey: API_KEY, maxRetries }),
  },
  {
    name: "anthropic",
    model: "claude-haiku-5-5",
    make: (maxRetries = 3) => emulatedProvider(emulator(), "anthropic", { apiKey: API_KEY, maxRetries }),
  },
];

describe.each(kinds)("the $name provider", ({ model, make }) => {
  const request = (extra: Partial<ModelRequest> = {}): ModelRequest => ({
    model,
    system: "You are terse.",
    messages: [{ role: "user", content: "Say hello" }],
    tools: [],
    ...extra,
  });

  it("streams the answer as several text deltas and stops at the end", async () => {
    // Chunks apart in time: the provider joins what arrives together (see `pushed`). Far
    // enough apart that a busy machine, whose event loop may stall for a while, still
    // reads them in more than one go.
    emulator().enqueue({ text: "Hello there, how are you today?", chunkSize: 5, delayMs: 120 });
    const { events, error } = await run(make(), request());
    expect(error).toBeUndefined();
    expect(events.filter((e) => e.type === "text").length).toBeGreaterThan(1);
    expect(textOf(events)).toBe("Hello there, how are you today?");
    expect(events.at(-1)).toEqual({ type: "stop", reason: "end" });
  });

  it("reports tool calls with their parsed arguments and stops for tool calls", async () => {
    emulator().enqueue({
      text: "Looking.",
      toolCalls: [
        { name: "fs__read_file", arguments: { path: "/etc/hosts", lines: 3 }, id: "call_a" },
        { name: "web__search", arguments: { q: "switchboard" }, id: "call_b" },
      ],
      chunkSize: 4,
    });
    const { events } = await run(make(), request({ tools: [tool("fs__read_file"), tool("web__search")] }));
    const calls = events.flatMap((e) => (e.type === "tool_call" ? [e.call] : []));
    expect(calls).toEqual([
      { id: "call_a", name: "fs__read_file", arguments: { path: "/etc/hosts", lines: 3 } },
      { id: "call_b", name: "web__search", arguments: { q: "switchboard" } },
    ]);
    expect(textOf(events)).toBe("Looking.");
    expect(events.at(-1)).toEqual({ type: "stop", reason: "tool_calls" });
    expect(emulator().requests[0]?.toolNames).toEqual(["fs__read_file", "web__search"]);
  });

  it("stops for the output limit, not for tool calls, when the limit cuts a call, and marks that call", async () => {
    const long = { path: "report.md", content: "x".repeat(400) };
    emulator().enqueue({
      toolCalls: [
        { name: "fs__stat", arguments: { path: "a" }, id: "call_whole" },
        { name: "fs__write", arguments: long, id: "call_cut" },
      ],
    });
    const tools = [tool("fs__stat"), tool("fs__write")];
    const { events } = await run(make(), request({ tools, maxOutputTokens: 20 }));
    const calls = events.filter((e) => e.type === "tool_call");
    expect(calls).toEqual([
      { type: "tool_call", call: { id: "call_whole", name: "fs__stat", arguments: { path: "a" } } },
      {
        type: "tool_call",
        call: { id: "call_cut", name: "fs__write", arguments: {}, invalidArguments: expect.any(String) },
        cutOff: true,
      },
    ]);
    expect(events.at(-1)).toEqual({ type: "stop", reason: "length" });
  });

  it("reports the usage the server counted, before the stop", async () => {
    emulator().enqueue({ text: "Hi.", usage: { input: 42, output: 7 } });
    const { events } = await run(make(), request());
    expect(events.at(-2)).toEqual({ type: "usage", usage: { inputTokens: 42, outputTokens: 7 } });
  });

  it("succeeds after two rate-limit answers, waiting as retry-after says", async () => {
    emulator().enqueue(
      { error: { status: 429, retryAfter: 0 } },
      { error: { status: 429, retryAfter: 0 } },
      { text: "Finally." },
    );
    const { events, error } = await run(make(), request());
    expect(error).toBeUndefined();
    expect(textOf(events)).toBe("Finally.");
    expect(emulator().requests).toHaveLength(3);
  });

  it("gives up on a persistent server error with llm_unavailable and a sentence that says how often it tried", async () => {
    emulator().setResponder(() => ({ error: { status: 500, retryAfter: 0 } }));
    const { events, error } = await run(make(3), request());
    expect(events).toEqual([]);
    expect(error?.code).toBe("llm_unavailable");
    expect(error?.userMessage).toMatch(/^The language model .*I tried 4 times\. Please try again/);
    expect(emulator().requests).toHaveLength(4);
  });

  it("reports a rate limit that does not clear as llm_rate_limited", async () => {
    emulator().setResponder(() => ({ error: { status: 429, retryAfter: 0 } }));
    const { error } = await run(make(1), request());
    expect(error?.code).toBe("llm_rate_limited");
    expect(error?.userMessage).toBe(
      "The language model is rate-limited right now; I tried 2 times. Please try again in a minute.",
    );
  });

  it("fails with llm_auth on a 401 at once, naming the key to check but never its value", async () => {
    emulator().enqueue({ error: { status: 401 } });
    const { error } = await run(make(), request());
    expect(error?.code).toBe("llm_auth");
    expect(error?.userMessage).toMatch(/_API_KEY/);
    expect(`${error?.message} ${error?.userMessage}`).not.toContain(API_KEY);
    expect(emulator().requests).toHaveLength(1);
  });

  it("reports a context-length rejection as llm_context_length", async () => {
    emulator().enqueue({
      error: { status: 400, message: "prompt is too long: 210000 tokens > 200000 maximum context length" },
    });
    const { error } = await run(make(), request());
    expect(error?.code).toBe("llm_context_length");
    expect(error?.userMessage).toMatch(/too long for the model's context window/);
  });

  it("reports Anthropic's prompt-plus-max_tokens rejection as llm_context_length", async () => {
    emulator().enqueue({
      error: {
        status: 400,
        message:
          "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000, decrease input length or `max_tokens` and try again",
      },
    });
    const { error } = await run(make(), request());
    expect(error?.code).toBe("llm_context_length");
  });

  it("reports a 413 as a request too large for the service, not as a conversation too long", async () => {
    emulator().enqueue({ error: { status: 413, message: "Request exceeds the maximum size" } });
    const { error } = await run(make(), request());
    expect(error?.code).toBe("llm_request_too_large");
    expect(error?.userMessage).toMatch(/too large/);
    expect(error?.userMessage).toMatch(/fewer or smaller/);
    expect(error?.userMessage).not.toMatch(/conversation|context window/);
    expect(emulator().requests).toHaveLength(1);
  });

  it("reports another 400 as llm_bad_request with the server's reason", async () => {
    emulator().enqueue({ error: { status: 400, message: "temperature must be at most 2" } });
    const { error } = await run(make(), request());
    expect(error?.code).toBe("llm_bad_request");
    expect(error?.userMessage).toContain("temperature must be at most 2");
  });

  it("passes malformed tool-call JSON on as invalidArguments", async () => {
    emulator().enqueue({
      toolCalls: [{ name: "fs__read_file", arguments: '{"path": "/etc', id: "call_bad" }],
    });
    const { events } = await run(make(), request({ tools: [tool("fs__read_file")] }));
    const call = events.find((e) => e.type === "tool_call");
    expect(call).toEqual({
      type: "tool_call",
      call: { id: "call_bad", name: "fs__read_file", arguments: {}, invalidArguments: '{"path": "/etc' },
    });
  });

  it("stops with llm_aborted when the signal aborts in the middle of the answer", async () => {
    emulator().enqueue({
      text: "one two three four five six seven eight nine ten",
      chunkSize: 3,
      delayMs: 40,
    });
    const controller = new AbortController();
    const events: ModelEvent[] = [];
    let error: unknown;
    try {
      for await (const event of make().stream(request(), controller.signal)) {
        events.push(event);
        if (events.length === 1) controller.abort();
      }
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(SwitchboardError);
    expect((error as SwitchboardError).code).toBe("llm_aborted");
    expect(events.some((e) => e.type === "stop")).toBe(false);
  });

  it("stops with llm_aborted when the signal was aborted before the request", async () => {
    const controller = new AbortController();
    controller.abort();
    const { error } = await run(make(), request(), controller.signal);
    expect(error?.code).toBe("llm_aborted");
  });

  // A stream ends early either way: the connection drops, or the server reports an error in it.
  const breaks = [
    { how: "the connection drops", error: undefined },
    {
      how: "the server reports an overload in it",
      error: { type: "overloaded_error", message: "Overloaded" },
    },
  ];

  it.each(breaks)(
    "reports a stream cut after some text ($how) as broken off, and does not ask again",
    async ({ error: reported }) => {
      emulator().enqueue(
        { cut: { afterChars: 12, text: "The answer is forty-two, because", error: reported } },
        { text: "SECOND TRY" },
      );
      const { events, error } = await run(make(), request());
      expect(textOf(events)).toBe("The answer i");
      expect(error?.code).toBe("llm_unavailable");
      expect(error?.userMessage).toMatch(/broke off midway/);
      expect(emulator().requests).toHaveLength(1);
    },
  );

  it.each(breaks)(
    "asks again when the stream breaks before anything was yielded ($how)",
    async ({ error: reported }) => {
      emulator().enqueue({ cut: { afterChars: 0, text: "lost", error: reported } }, { text: "Here it is." });
      const { events, error } = await run(make(), request());
      expect(error).toBeUndefined();
      expect(textOf(events)).toBe("Here it is.");
      expect(emulator().requests).toHaveLength(2);
    },
  );

  it("reports a request the server rejects inside the stream as llm_bad_request, with its reason", async () => {
    const rejected = { type: "invalid_request_error", message: "Your message contains an invalid image." };
    emulator().enqueue({ cut: { afterChars: 0, text: "never", error: rejected } });
    const { events, error } = await run(make(), request());
    expect(textOf(events)).toBe("");
    expect(error?.code).toBe("llm_bad_request");
    expect(error?.message).toMatch(/invalid image/);
    expect(emulator().requests).toHaveLength(1);
  });

  it("reports a server that cannot be reached as llm_unavailable, saying it could not reach it", async () => {
    const closed = await closedPort();
    const offline =
      model === "gpt-4o-mini"
        ? new OpenAIProvider({
            apiKey: API_KEY,
            baseURL: `http://127.0.0.1:${closed}/v1`,
            maxRetries: 0,
            timeoutMs: 5000,
          })
        : new AnthropicProvider({
            apiKey: API_KEY,
            baseURL: `http://127.0.0.1:${closed}`,
            maxRetries: 0,
            timeoutMs: 5000,
          });
    const { error } = await run(offline, request());
    expect(error?.code).toBe("llm_unavailable");
    expect(error?.userMessage).toMatch(/^I could not reach the language model service; I tried once\./);
  });

  it("lists the models the server offers", async () => {
    const models = await make().listModels();
    expect(models).toContain(model);
  });
});

function tool(name: string) {
  return {
    name,
    description: `The ${name} tool.`,
    inputSchema: { type: "object", properties: { path: { type: "string" } } },
  };
}

/** A loopback port that was just free and is now closed: connections to it are refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
