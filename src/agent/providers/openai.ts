import OpenAI from "openai";
import type {
  ChatCompletionChunk,
  ChatCompletionContentPart,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import type { ChatMessage, ToolCall, Usage, UserMessage } from "../../core/messages.js";
import { log } from "../../log.js";
import { untilAborted } from "./abortable.js";
import type { EventSink } from "./coalesce.js";
import { abortedError, isTransientStreamError, toProviderError } from "./errors.js";
import { openAIFetch } from "./openai-fetch.js";
import { isOpenAIReasoningModel, outputLimitParam } from "./openai-params.js";
import type { ModelEvent, ModelRequest, Provider, StopReason, ToolSpec } from "./provider.js";
import { StreamInterrupted, streamWithRetry } from "./retry.js";
import { readSse } from "./sse.js";
import { estimatedUsage } from "./usage-estimate.js";
import { newCallId, parseArguments, stopWithCalls, unfinished, withAuthor } from "./wire.js";

export interface OpenAIProviderOptions {
  apiKey: string;
  /** An OpenAI-compatible server (Ollama, vLLM, LM Studio, OpenRouter); unset means OpenAI itself. */
  baseURL?: string;
  maxRetries: number;
  timeoutMs: number;
}

/** Tool call as it grows over `delta.tool_calls` chunks. */
interface PartialCall {
  id: string;
  name: string;
  args: string;
}

/** The calls of one answer in the order they began, and the one last begun at each `index`. */
interface PartialCalls {
  all: PartialCall[];
  byIndex: Map<number, PartialCall>;
}

export class OpenAIProvider implements Provider {
  readonly name = "openai" as const;
  private readonly client: OpenAI;
  private readonly maxRetries: number;

  constructor(opts: OpenAIProviderOptions) {
    this.client = new OpenAI({
      apiKey: opts.apiKey,
      baseURL: opts.baseURL,
      maxRetries: opts.maxRetries,
      timeout: opts.timeoutMs,
      fetch: openAIFetch,
      logger: log.child({ sdk: "openai" }),
      logLevel: "warn",
    });
    this.maxRetries = opts.maxRetries;
  }

  stream(req: ModelRequest, signal: AbortSignal): AsyncIterable<ModelEvent> {
    return streamWithRetry((sink) => this.attempt(req, signal, sink), {
      provider: this.name,
      maxRetries: this.maxRetries,
      signal,
    });
  }

  async listModels(signal?: AbortSignal): Promise<string[]> {
    try {
      const ids: string[] = [];
      for await (const model of this.client.models.list({ signal })) ids.push(model.id);
      return ids.sort();
    } catch (err) {
      throw toProviderError(err, { provider: this.name, attempts: this.maxRetries + 1 });
    }
  }

  private body(req: ModelRequest): ChatCompletionCreateParamsStreaming {
    const body: ChatCompletionCreateParamsStreaming = {
      model: req.model,
      messages: toOpenAIMessages(req.system, req.messages),
      stream: true,
      stream_options: { include_usage: true },
    };
    if (req.tools.length > 0) {
      body.tools = req.tools.map(toOpenAITool);
      // Only with tools: OpenAI rejects a tool_choice that has none to refer to.
      if (req.toolChoice) body.tool_choice = req.toolChoice;
    }
    // Reasoning models refuse any but their default temperature; leaving it out never fails.
    if (req.temperature !== undefined && !isOpenAIReasoningModel(req.model))
      body.temperature = req.temperature;
    if (req.maxOutputTokens !== undefined) {
      // The client's own base URL: the SDK reads OPENAI_BASE_URL itself when given none.
      body[outputLimitParam(this.client.baseURL, req.model)] = req.maxOutputTokens;
    }
    return body;
  }

  /**
   * One request, its events handed to `sink` chunk by chunk. The SDK makes the request
   * (its retries, timeout and errors); the body's events are read by sse.ts (which says
   * why), with the SDK stream's rules: `[DONE]` ends the answer, a chunk
   * with an `error` (or an `error` event) is the SDK's APIError.
   */
  private async attempt(req: ModelRequest, signal: AbortSignal, sink: EventSink): Promise<void> {
    const ctx = { provider: this.name, attempts: this.maxRetries + 1 };
    let response: Response;
    try {
      const request = this.client.chat.completions.create(this.body(req), { signal }).asResponse();
      response = await untilAborted(request, signal);
    } catch (err) {
      throw toProviderError(err, ctx);
    }
    const calls: PartialCalls = { all: [], byIndex: new Map() };
    let finish: ChatCompletionChunk.Choice["finish_reason"] = null;
    let usage: ModelEvent | undefined;
    let done = false;
    /** Chunks read: from the first one on, the model is at work on the prompt, and is paid. */
    let chunks = 0;
    let written = "";
    let owed = true;
    const onChunk = (chunk: ChatCompletionChunk): boolean => {
      chunks += 1;
      if (chunk.usage) usage = { type: "usage", usage: usageOf(chunk.usage) };
      const choice = chunk.choices?.[0];
      if (!choice) return true;
      const text = choice.delta?.content;
      if (text) {
        written += text;
        sink.emit({ type: "text", delta: text });
      }
      for (const delta of choice.delta?.tool_calls ?? []) accumulate(calls, delta);
      if (choice.finish_reason) finish = choice.finish_reason;
      // Nobody reads on: reading stops and the response is let go.
      return !sink.stopped();
    };
    try {
      try {
        await readSse(response, (message) => {
          // After [DONE] the body is read to its end, unparsed, so that its connection is reused.
          if (done) return true;
          if (message.data.startsWith("[DONE]")) {
            done = true;
            return true;
          }
          const data = JSON.parse(message.data);
          if (message.event === "error")
            throw new OpenAI.APIError(undefined, data?.error, data?.message, undefined);
          if (data?.error) throw new OpenAI.APIError(undefined, data.error, undefined, response.headers);
          return onChunk(data as ChatCompletionChunk);
        });
        if (sink.stopped()) return;
      } catch (err) {
        if (signal.aborted) throw abortedError(err);
        if (isTransientStreamError(err)) throw new StreamInterrupted(describe(err), { cause: err });
        throw toProviderError(err, ctx);
      }
      if (signal.aborted) throw abortedError(signal.reason);
      if (finish === null) throw new StreamInterrupted("the stream ended without a finish_reason");
      const reason = stopWithCalls(stopReason(finish), calls.all.length);
      // Calls arrive one after another: only the last can be the one the limit cut.
      const last = calls.all.at(-1);
      for (const call of calls.all) {
        const cutOff = reason === "length" && call === last && unfinished(call.args);
        sink.emit({
          type: "tool_call",
          call: finishCall(call),
          ...(cutOff ? { cutOff: true as const } : {}),
        });
      }
      // A whole answer from a server that counts nothing (include_usage ignored) stays uncounted.
      owed = false;
      if (usage) sink.emit(usage);
      sink.emit({ type: "stop", reason });
    } finally {
      // Ended early: the usage chunk comes only after the last words (stream_options.include_usage),
      // so what was read is counted here; emitted before the error, which comes after it.
      if (owed && chunks > 0) sink.emit(usage ?? estimate(req, written, calls));
    }
  }
}

function estimate(req: ModelRequest, written: string, calls: PartialCalls): ModelEvent {
  const args = calls.all.map((c) => c.name + c.args).join("");
  return { type: "usage", usage: estimatedUsage(req, written + args), estimated: true };
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function accumulate(calls: PartialCalls, delta: ChatCompletionChunk.Choice.Delta.ToolCall): void {
  // Some compatible servers omit `index` and send each call whole; give those their own slot.
  const index = delta.index ?? calls.all.length;
  let call = calls.byIndex.get(index);
  // Ollama gives every call of a parallel batch index 0 (ollama/ollama#15457): only the id
  // tells its calls apart. A repeated id is the same call, as from servers that send it in
  // every delta; the id-less deltas after it belong to the call it began.
  if (!call || (delta.id && call.id && delta.id !== call.id)) {
    call = { id: "", name: "", args: "" };
    calls.all.push(call);
    calls.byIndex.set(index, call);
  }
  if (delta.id) call.id = delta.id;
  // OpenAI sends a name once, in the call's first delta; a server that streams it in pieces
  // needs them joined, and one that repeats it whole in every delta (NVIDIA NIM, some
  // proxies, Gemini's compatible API) must not have it doubled ("No tool named toolAtoolA").
  const name = delta.function?.name;
  if (name && name !== call.name) call.name += name;
  if (delta.function?.arguments) call.args += delta.function.arguments;
}

/** `prompt_tokens` counts the cached ones too; they are billed at the cached-input price. */
function usageOf(u: NonNullable<ChatCompletionChunk["usage"]>): Usage {
  const usage: Usage = { inputTokens: u.prompt_tokens, outputTokens: u.completion_tokens };
  const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
  if (cached > 0) usage.cachedInputTokens = cached;
  return usage;
}

function finishCall(call: PartialCall): ToolCall {
  const id = call.id || newCallId();
  return { id, name: call.name, ...parseArguments(call.args) };
}

function stopReason(finish: NonNullable<ChatCompletionChunk.Choice["finish_reason"]>): StopReason {
  switch (finish) {
    case "stop":
      return "end";
    case "length":
      return "length";
    case "content_filter":
      return "filtered";
    case "tool_calls":
    case "function_call":
      return "tool_calls";
    default:
      return "other";
  }
}

function toOpenAITool(tool: ToolSpec): ChatCompletionTool {
  return {
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
  };
}

function userContent(msg: UserMessage): string | ChatCompletionContentPart[] {
  const text = withAuthor(msg);
  if (!msg.parts?.length) return text;
  const parts: ChatCompletionContentPart[] = text ? [{ type: "text", text }] : [];
  for (const part of msg.parts) {
    if (part.type === "text") parts.push({ type: "text", text: part.text });
    else parts.push({ type: "image_url", image_url: { url: `data:${part.mimeType};base64,${part.data}` } });
  }
  return parts;
}

export function toOpenAIMessages(system: string, messages: ChatMessage[]): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = system ? [{ role: "system", content: system }] : [];
  for (const msg of messages) {
    if (msg.role === "user") {
      out.push({ role: "user", content: userContent(msg) });
    } else if (msg.role === "assistant") {
      if (!msg.toolCalls?.length) {
        out.push({ role: "assistant", content: msg.content });
        continue;
      }
      out.push({
        role: "assistant",
        content: msg.content || null,
        tool_calls: msg.toolCalls.map((c) => ({
          id: c.id,
          type: "function",
          // The parsed object, never the raw invalid text: Ollama and vLLM parse this back
          // into JSON to fill their chat templates and reject the whole request otherwise.
          function: { name: c.name, arguments: JSON.stringify(c.arguments) },
        })),
      });
    } else {
      // Chat Completions has no error flag on tool results; the model needs to know.
      const content = msg.isError && !/^error\b/i.test(msg.content) ? `Error: ${msg.content}` : msg.content;
      out.push({ role: "tool", tool_call_id: msg.toolCallId, content });
    }
  }
  return out;
}
