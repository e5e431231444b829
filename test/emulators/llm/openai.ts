import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import { randomId, splitInto, textOfContent } from "./script.js";
import type { PlannedReply, RecordedRequest } from "./types.js";
import { cutJson, retryHeaders, SseWriter, sendJson } from "./wire.js";

export const OPENAI_MODELS = ["gpt-4o", "gpt-4o-mini"];

/** An account out of credit or over its quota: a 429, as a rate limit is, but of its own type. */
const INSUFFICIENT_QUOTA = {
  type: "insufficient_quota",
  code: "insufficient_quota",
  message:
    "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
};

/** Error `type` and `code` as OpenAI sends them for each status (or for the type asked for). */
function errorKind(status: number, type?: string): { type: string; code: string | null; message: string } {
  if (type === INSUFFICIENT_QUOTA.type) return INSUFFICIENT_QUOTA;
  if (status === 401)
    return { type: "invalid_request_error", code: "invalid_api_key", message: "Incorrect API key provided." };
  if (status === 403)
    return {
      type: "invalid_request_error",
      code: "unsupported_country_region_territory",
      message: "Forbidden.",
    };
  if (status === 404)
    return { type: "invalid_request_error", code: "model_not_found", message: "The model does not exist." };
  if (status === 429)
    return { type: "requests", code: "rate_limit_exceeded", message: "Rate limit reached for requests." };
  if (status >= 500)
    return {
      type: "server_error",
      code: null,
      message: "The server had an error while processing your request.",
    };
  return { type: "invalid_request_error", code: null, message: "Invalid request." };
}

export function sendOpenAiError(
  res: ServerResponse,
  status: number,
  message?: string,
  retryAfter?: number,
  code?: string | null,
  param: string | null = null,
  more: { type?: string; headers?: Record<string, string> } = {},
): void {
  const kind = errorKind(status, more.type);
  const error = {
    message: message ?? kind.message,
    type: more.type ?? kind.type,
    param,
    code: code === undefined ? kind.code : code,
  };
  sendJson(res, status, { error }, { ...retryHeaders(retryAfter), ...more.headers });
}

export function sendOpenAiModels(res: ServerResponse): void {
  const created = Math.floor(Date.now() / 1000);
  sendJson(res, 200, {
    object: "list",
    data: OPENAI_MODELS.map((id) => ({ id, object: "model", created, owned_by: "llm-emulator" })),
  });
}

/** Reads a chat completion request; a string is the 400 message for a body the real API rejects. */
export function recordOpenAi(
  body: Record<string, unknown>,
  headers: IncomingHttpHeaders,
): RecordedRequest | string {
  if (typeof body.model !== "string") return "you must provide a model parameter";
  if (!Array.isArray(body.messages)) return "Missing required parameter: 'messages'.";
  const system = body.messages
    .filter((m): m is { content: unknown } => {
      const role = (m as { role?: unknown } | null)?.role;
      return role === "system" || role === "developer";
    })
    .map((m) => textOfContent(m.content))
    .join("\n");
  const tools = Array.isArray(body.tools) ? (body.tools as Array<{ function?: { name?: unknown } }>) : [];
  return {
    protocol: "openai",
    model: body.model,
    stream: body.stream === true,
    system,
    messages: body.messages,
    toolNames: tools.map((t) => t.function?.name).filter((n): n is string => typeof n === "string"),
    body,
    headers: { ...headers },
  };
}

function finishReason(plan: PlannedReply): string {
  if (plan.truncated) return "length";
  if (plan.withheld) return "content_filter";
  return plan.toolCalls.length > 0 ? "tool_calls" : "stop";
}

function usageBody(plan: PlannedReply) {
  const { input, output, cached } = plan.usage;
  const details = cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: cached } };
  return { prompt_tokens: input, completion_tokens: output, total_tokens: input + output, ...details };
}

function completionBody(req: RecordedRequest, plan: PlannedReply) {
  const toolCalls = plan.toolCalls.map((c) => ({
    id: c.id,
    type: "function",
    function: { name: c.name, arguments: c.argumentsJson },
  }));
  return {
    id: randomId("chatcmpl-"),
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: req.model,
    system_fingerprint: null,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: plan.text === "" && toolCalls.length > 0 ? null : plan.text,
          refusal: null,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        logprobs: null,
        finish_reason: finishReason(plan),
      },
    ],
    usage: usageBody(plan),
  };
}

/** Chunk factory for one streamed completion; `usage: null` rides on every chunk when usage was asked for. */
function chunker(req: RecordedRequest) {
  const options = req.body.stream_options as { include_usage?: unknown } | undefined;
  const includeUsage = options?.include_usage === true;
  const base = {
    id: randomId("chatcmpl-"),
    object: "chat.completion.chunk",
    created: Math.floor(Date.now() / 1000),
    model: req.model,
    system_fingerprint: null,
  };
  return {
    includeUsage,
    delta: (delta: Record<string, unknown>, finish: string | null = null) => ({
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(includeUsage ? { usage: null } : {}),
    }),
    usage: (plan: PlannedReply) => ({ ...base, choices: [], usage: usageBody(plan) }),
  };
}

async function streamText(sse: SseWriter, make: ReturnType<typeof chunker>, text: string, size: number) {
  for (const piece of splitInto(text, size)) {
    await sse.pause();
    await sse.send(make.delta({ content: piece }));
  }
}

export async function writeOpenAiReply(res: ServerResponse, req: RecordedRequest, plan: PlannedReply) {
  if (!req.stream) return sendJson(res, 200, completionBody(req, plan));
  const sse = new SseWriter(res, plan.delayMs);
  const make = chunker(req);
  await sse.send(make.delta({ role: "assistant", content: "", refusal: null }));
  await streamText(sse, make, plan.text, plan.chunkSize);
  for (const [position, call] of plan.toolCalls.entries()) {
    const index = plan.callIndexes === "zero" ? 0 : position;
    const names =
      plan.nameDeltas === "split" ? splitInto(call.name, Math.ceil(call.name.length / 3)) : [call.name];
    const head = { index, id: call.id, type: "function", function: { name: names[0], arguments: "" } };
    await sse.send(make.delta({ tool_calls: [head] }));
    for (const name of names.slice(1))
      await sse.send(make.delta({ tool_calls: [{ index, function: { name } }] }));
    const name = plan.nameDeltas === "every" ? { name: call.name } : {};
    for (const piece of splitInto(call.argumentsJson, plan.chunkSize)) {
      await sse.pause();
      await sse.send(make.delta({ tool_calls: [{ index, function: { ...name, arguments: piece } }] }));
    }
  }
  await sse.send(make.delta({}, finishReason(plan)));
  if (make.includeUsage) await sse.send(make.usage(plan));
  await sse.send("[DONE]");
  sse.end();
}

export async function writeOpenAiCut(
  res: ServerResponse,
  req: RecordedRequest,
  plan: PlannedReply,
  afterChars: number,
  error?: { type: string; message: string },
) {
  if (!req.stream) return cutJson(res, completionBody(req, plan), afterChars);
  const sse = new SseWriter(res, plan.delayMs);
  const make = chunker(req);
  await sse.send(make.delta({ role: "assistant", content: "", refusal: null }));
  await streamText(sse, make, plan.text.slice(0, afterChars), plan.chunkSize);
  if (!error) return sse.cut();
  await sse.send({ error: { message: error.message, type: error.type, param: null, code: null } });
  sse.end();
}
