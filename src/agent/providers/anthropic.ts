import Anthropic from "@anthropic-ai/sdk";
import type {
  StopReason as AnthropicStopReason,
  MessageCreateParamsStreaming,
  RawMessageStreamEvent,
  Tool,
} from "@anthropic-ai/sdk/resources/messages";
import type { ErrorType } from "@anthropic-ai/sdk/resources/shared";
import type { Usage } from "../../core/messages.js";
import { log } from "../../log.js";
import { countTokens } from "../context.js";
import { fitAnthropicLimits, leftOutNotice } from "./anthropic-limits.js";
import { type ImageLabels, toAnthropicMessages } from "./anthropic-messages.js";
import type { EventSink } from "./coalesce.js";
import { abortedError, isTransientStreamError, toProviderError } from "./errors.js";
import { withoutLongWaits } from "./long-waits.js";
import { modelFetch } from "./model-fetch.js";
import type { ModelEvent, ModelRequest, Provider, StopReason, ToolSpec } from "./provider.js";
import { StreamInterrupted, streamWithRetry } from "./retry.js";
import { readSse } from "./sse.js";
import { parseArguments, stopWithCalls, unfinished } from "./wire.js";

/** A refusal that asks for a long wait is not retried (see long-waits.ts). */
async function anthropicFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  return withoutLongWaits(await modelFetch(input, init));
}

export interface AnthropicProviderOptions {
  apiKey: string;
  baseURL?: string;
  maxRetries: number;
  timeoutMs: number;
}

/** The Messages API requires `max_tokens`; this is what we ask for when the config says nothing. */
export const DEFAULT_MAX_TOKENS = 4096;

interface ToolUseBlock {
  id: string;
  name: string;
  json: string;
}

export class AnthropicProvider implements Provider {
  readonly name = "anthropic" as const;
  private readonly client: Anthropic;
  private readonly maxRetries: number;

  constructor(opts: AnthropicProviderOptions) {
    this.client = new Anthropic({
      apiKey: opts.apiKey,
      baseURL: opts.baseURL,
      maxRetries: opts.maxRetries,
      timeout: opts.timeoutMs,
      fetch: anthropicFetch,
      logger: log.child({ sdk: "anthropic" }),
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
      for await (const model of this.client.models.list({}, { signal })) ids.push(model.id);
      return ids.sort();
    } catch (err) {
      throw toProviderError(err, { provider: this.name, attempts: this.maxRetries + 1 });
    }
  }

  private body(req: ModelRequest, labels: ImageLabels): MessageCreateParamsStreaming {
    const body: MessageCreateParamsStreaming = {
      model: req.model,
      max_tokens: req.maxOutputTokens ?? DEFAULT_MAX_TOKENS,
      messages: toAnthropicMessages(req.messages, { toolBlocks: req.tools.length > 0, labels }),
      stream: true,
    };
    if (req.system) body.system = req.system;
    if (req.tools.length > 0) {
      body.tools = req.tools.map(toAnthropicTool);
      if (req.toolChoice) body.tool_choice = { type: req.toolChoice };
    }
    // No `temperature`: this SDK's Messages API no longer has the parameter.
    return body;
  }

  /**
   * One request, its events handed to `sink` event by event. The SDK makes the request
   * (its retries, timeout and errors); the body's events are read by sse.ts (which says
   * why), with the SDK stream's rules: `ping` and unnamed events skipped, an `error` event
   * the SDK's APIError.
   */
  private async attempt(req: ModelRequest, signal: AbortSignal, sink: EventSink): Promise<void> {
    const ctx = { provider: this.name, attempts: this.maxRetries + 1 };
    const labels: ImageLabels = new Map();
    const body = this.body(req, labels);
    const leftOut = fitAnthropicLimits(body, labels);
    let response: Response;
    try {
      response = await this.client.messages.create(body, { signal }).asResponse();
    } catch (err) {
      throw toProviderError(err, ctx);
    }
    const answer = new AnswerReader(sink);
    try {
      try {
        await readSse(response, (message) => {
          if (message.event === null || message.event === "ping") return true;
          if (message.event === "error") {
            const body = parsedOrText(message.data);
            const type = (body as { error?: { type?: ErrorType } })?.error?.type;
            throw new Anthropic.APIError(undefined, body as object, undefined, response.headers, type);
          }
          if (!message.data) return true;
          answer.read(JSON.parse(message.data) as RawMessageStreamEvent);
          return !sink.stopped();
        });
        if (sink.stopped()) return;
      } catch (err) {
        if (signal.aborted) throw abortedError(err);
        if (isTransientStreamError(err)) throw new StreamInterrupted(describe(err), { cause: err });
        throw toProviderError(err, ctx);
      }
      if (signal.aborted) throw abortedError(signal.reason);
      if (!answer.stopped) throw new StreamInterrupted("the stream ended without message_stop");
      const reason = answer.emitCalls();
      if (leftOut) sink.emit({ type: "notice", text: leftOutNotice(leftOut) });
      answer.emitUsage();
      sink.emit({ type: "stop", reason });
    } finally {
      // Stopped, broken off or failed after message_start: the prompt was read and billed.
      // Emitted before the error, which the consumer gets after what was emitted before it.
      answer.emitUsage();
    }
  }
}

/**
 * A Messages stream's events read into text (handed on as it comes), tool calls (handed on
 * once the stop reason says whether the last one was cut off) and its usage and stop.
 */
class AnswerReader {
  /** Thinking and server-tool blocks are skipped; only tool_use input is assembled. */
  private readonly toolBlocks = new Map<number, ToolUseBlock>();
  private readonly calls: ToolUseBlock[] = [];
  /** Whether the newest content block is a tool_use: only that one can be cut by the limit. */
  private lastIsTool = false;
  readonly usage: Usage = { inputTokens: 0, outputTokens: 0 };
  stop: AnthropicStopReason | null = null;
  stopped = false;
  /** message_start was read: the request reached the model, and its usage is owed once. */
  private started = false;
  private usageSent = false;
  /** The output counts came with a message_delta, not only message_start's first token or so. */
  private outputCounted = false;
  /** Text and tool input streamed so far: the output's count when the stream ends before a message_delta. */
  private written = "";

  constructor(private readonly sink: EventSink) {}

  /** The usage event, once, when the request reached the model. */
  emitUsage(): void {
    if (!this.started || this.usageSent) return;
    this.usageSent = true;
    if (this.outputCounted) {
      this.sink.emit({ type: "usage", usage: this.usage });
      return;
    }
    const outputTokens = Math.max(this.usage.outputTokens, countTokens(this.written));
    this.sink.emit({ type: "usage", usage: { ...this.usage, outputTokens }, estimated: true });
  }

  /** Hands on the calls, the one the output limit cut marked so; returns the answer's stop reason. */
  emitCalls(): StopReason {
    // A block the stream never closed is still a call the model began: handed on, not lost.
    for (const open of this.toolBlocks.values()) this.calls.push(open);
    this.toolBlocks.clear();
    const reason = stopWithCalls(stopReason(this.stop), this.calls.length);
    const last = this.lastIsTool ? this.calls.at(-1) : undefined;
    for (const block of this.calls) {
      const call = { id: block.id, name: block.name, ...parseArguments(block.json) };
      const cutOff = reason === "length" && block === last && unfinished(block.json);
      this.sink.emit({ type: "tool_call", call, ...(cutOff ? { cutOff: true as const } : {}) });
    }
    return reason;
  }

  private text(delta: string): void {
    this.written += delta;
    this.sink.emit({ type: "text", delta });
  }

  read(event: RawMessageStreamEvent): void {
    switch (event.type) {
      case "message_start": {
        const u = event.message.usage;
        // Cached prompt tokens are billed and counted apart from `input_tokens`.
        const read = u.cache_read_input_tokens ?? 0;
        const written = u.cache_creation_input_tokens ?? 0;
        this.usage.inputTokens = u.input_tokens + written + read;
        this.usage.outputTokens = u.output_tokens;
        if (read > 0) this.usage.cachedInputTokens = read;
        if (written > 0) this.usage.cacheWriteTokens = written;
        this.started = true;
        return;
      }
      case "content_block_start": {
        const b = event.content_block;
        this.lastIsTool = b.type === "tool_use";
        if (b.type === "tool_use") this.toolBlocks.set(event.index, { id: b.id, name: b.name, json: "" });
        else if (b.type === "text" && b.text) this.text(b.text);
        return;
      }
      case "content_block_delta": {
        const d = event.delta;
        if (d.type === "text_delta" && d.text) this.text(d.text);
        else if (d.type === "input_json_delta") {
          const open = this.toolBlocks.get(event.index);
          if (open) open.json += d.partial_json;
          this.written += d.partial_json;
        }
        return;
      }
      case "content_block_stop": {
        const open = this.toolBlocks.get(event.index);
        if (!open) return;
        this.toolBlocks.delete(event.index);
        this.calls.push(open);
        return;
      }
      case "message_delta": {
        if (event.delta.stop_reason) this.stop = event.delta.stop_reason;
        // Cumulative counts: the last delta wins.
        this.usage.outputTokens = event.usage.output_tokens;
        this.outputCounted = true;
        if (event.usage.input_tokens)
          this.usage.inputTokens = Math.max(this.usage.inputTokens, event.usage.input_tokens);
        return;
      }
      case "message_stop":
        this.stopped = true;
        return;
    }
  }
}

/** An error event's data as JSON, or as the text it is when it is not JSON (as the SDK reads it). */
function parsedOrText(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function stopReason(stop: AnthropicStopReason | null): StopReason {
  switch (stop) {
    case "end_turn":
    case "stop_sequence":
      return "end";
    case "tool_use":
      return "tool_calls";
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "refusal":
      return "refused";
    default:
      return "other";
  }
}

function toAnthropicTool(tool: ToolSpec): Tool {
  // The API insists on an object schema at the top; MCP tools nearly always have one.
  const schema = { type: "object", ...tool.inputSchema } as Tool.InputSchema;
  return { name: tool.name, description: tool.description, input_schema: schema };
}
