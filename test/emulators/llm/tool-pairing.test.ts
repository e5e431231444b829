import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LlmEmulator } from "./index.js";

let emu: LlmEmulator;
beforeAll(async () => {
  emu = await LlmEmulator.start();
});
afterEach(() => emu.reset());
afterAll(() => emu.close());

type OpenAiMessage = OpenAI.ChatCompletionMessageParam;

/** The SDK's 400 body for `messages`, or undefined when they were answered. */
async function openAiRefusal(messages: OpenAiMessage[]) {
  const client = new OpenAI({ apiKey: "sk-test", baseURL: emu.openaiBaseUrl, maxRetries: 0 });
  const tools = [
    { type: "function" as const, function: { name: "fs__read", parameters: { type: "object" } } },
  ];
  try {
    await client.chat.completions.create({ model: "gpt-4o", messages, tools });
    return undefined;
  } catch (err) {
    if (!(err instanceof OpenAI.BadRequestError)) throw err;
    return err.error;
  }
}

const call = (id: string) => ({
  id,
  type: "function" as const,
  function: { name: "fs__read", arguments: "{}" },
});
const calls = (...ids: string[]): OpenAiMessage => ({
  role: "assistant",
  content: null,
  tool_calls: ids.map(call),
});
const result = (id: string): OpenAiMessage => ({ role: "tool", tool_call_id: id, content: "ok" });
const ask = (content: string): OpenAiMessage => ({ role: "user", content });
const invalid = (message: string, param: string) => ({
  message,
  type: "invalid_request_error",
  param,
  code: null,
});

describe("the emulator's OpenAI side pairs tool messages with tool calls, as Chat Completions does", () => {
  it("answers a conversation whose every call has its tool message, in any order, before the next message", async () => {
    const messages = [
      ask("read both"),
      calls("call_a", "call_b"),
      result("call_b"),
      result("call_a"),
      ask("thanks"),
    ];
    expect(await openAiRefusal(messages)).toBeUndefined();
  });

  it("refuses a call left unanswered before the next message, or at the end, naming the ids", async () => {
    const expected = invalid(
      "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_b",
      "messages.[1].role",
    );
    expect(
      await openAiRefusal([ask("read"), calls("call_a", "call_b"), result("call_a"), ask("and?")]),
    ).toEqual(expected);
    expect(await openAiRefusal([ask("read"), calls("call_a", "call_b"), result("call_a")])).toEqual(expected);
    expect(emu.requests).toHaveLength(0);
  });

  it("refuses a tool message after anything but a call or its siblings, and one that answers no call of it", async () => {
    expect(await openAiRefusal([ask("read"), result("call_a")])).toEqual(
      invalid(
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        "messages.[1].role",
      ),
    );
    const late = [ask("read"), calls("call_a"), result("call_a"), ask("more"), result("call_a")];
    expect(await openAiRefusal(late)).toEqual(
      invalid(
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        "messages.[4].role",
      ),
    );
    expect(await openAiRefusal([ask("read"), calls("call_a"), result("call_z")])).toEqual(
      invalid(
        "Invalid parameter: 'tool_call_id' of 'call_z' not found in 'tool_calls' of previous message.",
        "messages.[2].tool_call_id",
      ),
    );
  });
});

type Block = Record<string, unknown>;
const use = (id: string): Block => ({ type: "tool_use", id, name: "fs__read", input: {} });
const res = (id: string): Block => ({ type: "tool_result", tool_use_id: id, content: "ok" });
const text = (t: string): Block => ({ type: "text", text: t });
const user = (...content: Block[]) => ({ role: "user", content });
const assistant = (...content: Block[]) => ({ role: "assistant", content });

/** A Messages request as it goes over the wire; the status and the error's message. */
async function anthropicRefusal(messages: unknown[]) {
  const res = await fetch(`${emu.anthropicBaseUrl}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": "k", "anthropic-version": "2023-06-01", "content-type": "application/json" },
    body: JSON.stringify({
      model: "claude-sonnet-5-5",
      max_tokens: 100,
      messages,
      tools: [{ name: "fs__read", input_schema: { type: "object" } }],
    }),
  });
  if (res.status === 200) return undefined;
  const body = (await res.json()) as { error: { type: string; message: string } };
  return { status: res.status, type: body.error.type, message: body.error.message };
}

const refused = (message: string) => ({ status: 400, type: "invalid_request_error", message });

describe("the emulator's Anthropic side pairs tool_result blocks with tool_use blocks, as the Messages API does", () => {
  it("answers results first in the next user message, with more text after them", async () => {
    const messages = [
      user(text("read both")),
      assistant(use("toolu_a"), use("toolu_b")),
      user(res("toolu_b"), res("toolu_a"), text("and then?")),
    ];
    expect(await anthropicRefusal(messages)).toBeUndefined();
  });

  it("refuses a tool_use without its tool_result in the very next message", async () => {
    const expected = refused(
      "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_b. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
    );
    const later = [
      user(text("read")),
      assistant(use("toolu_a"), use("toolu_b")),
      user(res("toolu_a")),
      assistant(text("one more")),
      user(res("toolu_b")),
    ];
    expect(await anthropicRefusal(later)).toEqual(expected);
    expect(
      await anthropicRefusal([
        user(text("read")),
        assistant(use("toolu_a"), use("toolu_b")),
        user(res("toolu_a")),
      ]),
    ).toEqual(expected);
    expect(await anthropicRefusal([user(text("read")), assistant(use("toolu_b"))])).toEqual(
      refused(
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_b. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
      ),
    );
    expect(emu.requests).toHaveLength(0);
  });

  it("refuses results that do not come first in the message", async () => {
    const messages = [user(text("read")), assistant(use("toolu_a")), user(text("here:"), res("toolu_a"))];
    expect(await anthropicRefusal(messages)).toEqual(
      refused(
        "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.",
      ),
    );
  });

  it("refuses a tool_result that answers no tool_use of the message before it, through the SDK", async () => {
    const client = new Anthropic({ apiKey: "k", baseURL: emu.anthropicBaseUrl, maxRetries: 0 });
    const err = await client.messages
      .create({
        model: "claude-sonnet-5-5",
        max_tokens: 100,
        tools: [{ name: "fs__read", input_schema: { type: "object" } }],
        messages: [
          { role: "user", content: "read" },
          { role: "assistant", content: [{ type: "text", text: "No need." }] },
          { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_a", content: "ok" }] },
        ],
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
      type: "error",
      error: {
        type: "invalid_request_error",
        message:
          "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_a. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
      },
    });
  });
});
