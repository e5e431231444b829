import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import { anthropicMessagesRefusal } from "./anthropic-rules.js";
import { randomId, splitInto, textOfContent } from "./script.js";
import type { PlannedReply, RecordedRequest } from "./types.js";
import { cutJson, retryHeaders, SseWriter, sendJson } from "./wire.js";

export const ANTHROPIC_MODELS = ["claude-sonnet-5-5", "claude-haiku-5-5"];

/**
 * The Messages API's limit on a request's body: "32 MB". Whether that is 10^6 or 2^20
 * bytes a megabyte is not said; the emulator takes the smaller.
 */
export const ANTHROPIC_MAX_REQUEST_BYTES = 32_000_000;

const ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  504: "timeout_error",
  529: "overloaded_error",
};

const DEFAULT_MESSAGES: Record<string, string> = {
  authentication_error: "x-api-key header is required",
  rate_limit_error: "Number of requests has exceeded your rate limit.",
  overloaded_error: "Overloaded",
  api_error: "Internal server error",
};

export function sendAnthropicError(
  res: ServerResponse,
  status: number,
  message?: string,
  retryAfter?: number,
  more: { type?: string; headers?: Record<string, string> } = {},
): void {
  const type = more.type ?? ERROR_TYPES[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
  const requestId = randomId("req_");
  sendJson(
    res,
    status,
    {
      type: "error",
      error: { type, message: message ?? DEFAULT_MESSAGES[type] ?? "Invalid request" },
      request_id: requestId,
    },
    { "request-id": requestId, ...retryHeaders(retryAfter), ...more.headers },
  );
}

export function sendAnthropicModels(res: ServerResponse): void {
  const createdAt = new Date().toISOString();
  sendJson(res, 200, {
    data: ANTHROPIC_MODELS.map((id) => ({ type: "model", id, display_name: id, created_at: createdAt })),
    has_more: false,
    first_id: ANTHROPIC_MODELS[0] ?? null,
    last_id: ANTHROPIC_MODELS.at(-1) ?? null,
  });
}

/** Reads a Messages request; a string is the 400 message for a body the real API rejects. */
export function recordAnthropic(
  body: Record<string, unknown>,
  headers: IncomingHttpHeaders,
): RecordedRequest | string {
  if (typeof body.model !== "string") return "model: Field required";
  if (!Array.isArray(body.messages)) return "messages: Field required";
  if (typeof body.max_tokens !== "number") return "max_tokens: Field required";
  const first = body.messages[0] as { role?: unknown } | undefined;
  if (first && first.role !== "user") return 'messages: first message must use the "user" role';
  const refusal = anthropicMessagesRefusal(body, body.messages);
  if (refusal) return refusal;
  const system = Array.isArray(body.system)
    ? (body.system as unknown[]).map((b) => textOfContent([b])).join("\n")
    : typeof body.system === "string"
      ? body.system
      : "";
  const tools = Array.isArray(body.tools) ? (body.tools as Array<{ name?: unknown }>) : [];
  return {
    protocol: "anthropic",
    model: body.model,
    stream: body.stream === true,
    system,
    messages: body.messages,
    toolNames: tools.map((t) => t.name).filter((n): n is string => typeof n === "string"),
    body,
    headers: { ...headers },
  };
}

function stopReason(plan: PlannedReply): string {
  if (plan.truncated) return "max_tokens";
  if (plan.withheld) return "refusal";
  return plan.toolCalls.length > 0 ? "tool_use" : "end_turn";
}

/** A scripted raw string that is not JSON still goes out as-is, to emulate a broken model. */
function inputOf(argumentsJson: string): unknown {
  try {
    return JSON.parse(argumentsJson);
  } catch {
    return argumentsJson;
  }
}

/** The prompt's tokens as the Messages API splits them: `input_tokens` are only those not cached. */
function inputUsage(plan: PlannedReply) {
  const { input, cached = 0, cacheWrite = 0 } = plan.usage;
  return {
    input_tokens: input - cached - cacheWrite,
    cache_creation_input_tokens: cacheWrite,
    cache_read_input_tokens: cached,
  };
}

function messageBody(req: RecordedRequest, plan: PlannedReply) {
  const content: unknown[] = [];
  if (plan.text) content.push({ type: "text", text: plan.text });
  for (const c of plan.toolCalls) {
    const parsed = inputOf(c.argumentsJson);
    // A call the output limit cut has no whole input; this shape holds only an object.
    const input = plan.truncated && typeof parsed === "string" ? {} : parsed;
    content.push({ type: "tool_use", id: c.id, name: c.name, input });
  }
  return {
    id: randomId("msg_"),
    type: "message",
    role: "assistant",
    model: req.model,
    content,
    stop_reason: stopReason(plan),
    stop_sequence: null,
    usage: { ...inputUsage(plan), output_tokens: plan.usage.output },
  };
}

/** message_start as the API sends it: empty content, input usage, a token or so of output so far. */
async function startMessage(sse: SseWriter, req: RecordedRequest, plan: PlannedReply): Promise<void> {
  const message = {
    ...messageBody(req, plan),
    content: [],
    stop_reason: null,
    usage: { ...inputUsage(plan), output_tokens: 1 },
  };
  await sse.send({ type: "message_start", message }, "message_start");
  await sse.send({ type: "ping" }, "ping");
}

async function streamTextBlock(sse: SseWriter, index: number, text: string, size: number): Promise<void> {
  const start = { type: "content_block_start", index, content_block: { type: "text", text: "" } };
  await sse.send(start, "content_block_start");
  for (const piece of splitInto(text, size)) {
    await sse.pause();
    const delta = { type: "content_block_delta", index, delta: { type: "text_delta", text: piece } };
    await sse.send(delta, "content_block_delta");
  }
}

export async function writeAnthropicReply(res: ServerResponse, req: RecordedRequest, plan: PlannedReply) {
  if (!req.stream) return sendJson(res, 200, messageBody(req, plan));
  const sse = new SseWriter(res, plan.delayMs);
  await startMessage(sse, req, plan);
  let index = 0;
  if (plan.text) {
    await streamTextBlock(sse, index, plan.text, plan.chunkSize);
    await sse.send({ type: "content_block_stop", index }, "content_block_stop");
    index++;
  }
  for (const call of plan.toolCalls) {
    const block = { type: "tool_use", id: call.id, name: call.name, input: {} };
    await sse.send({ type: "content_block_start", index, content_block: block }, "content_block_start");
    // The API opens every tool input with an empty partial_json; consumers must tolerate it.
    for (const piece of ["", ...splitInto(call.argumentsJson, plan.chunkSize)]) {
      await sse.pause();
      const delta = {
        type: "content_block_delta",
        index,
        delta: { type: "input_json_delta", partial_json: piece },
      };
      await sse.send(delta, "content_block_delta");
    }
    await sse.send({ type: "content_block_stop", index }, "content_block_stop");
    index++;
  }
  const messageDelta = {
    type: "message_delta",
    delta: { stop_reason: stopReason(plan), stop_sequence: null },
    usage: { output_tokens: plan.usage.output },
  };
  await sse.send(messageDelta, "message_delta");
  await sse.send({ type: "message_stop" }, "message_stop");
  sse.end();
}

export async function writeAnthropicCut(
  res: ServerResponse,
  req: RecordedRequest,
  plan: PlannedReply,
  afterChars: number,
  error?: { type: string; message: string },
) {
  if (!req.stream) return cutJson(res, messageBody(req, plan), afterChars);
  const sse = new SseWriter(res, plan.delayMs);
  await startMessage(sse, req, plan);
  await streamTextBlock(sse, 0, plan.text.slice(0, afterChars), plan.chunkSize);
  if (!error) return sse.cut();
  await sse.send({ type: "error", error: { type: error.type, message: error.message } }, "error");
  sse.end();
}
