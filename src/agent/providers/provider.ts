import type { ChatMessage, ToolCall, Usage } from "../../core/messages.js";

/** A tool as offered to the model: provider-safe name, JSON Schema object for its input. */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

export interface ModelRequest {
  model: string;
  system: string;
  messages: ChatMessage[];
  tools: ToolSpec[];
  maxOutputTokens?: number;
  temperature?: number;
  /** "none" asks for an answer without tool calls (tools stay listed: Anthropic needs them when the history has tool blocks). */
  toolChoice?: "auto" | "none";
}

/**
 * "filtered": OpenAI's content filter withheld the rest of the answer (finish_reason
 * "content_filter"); "refused": the model declined to go on (Anthropic's stop_reason "refusal").
 */
export type StopReason = "end" | "tool_calls" | "length" | "filtered" | "refused" | "other";

export type ModelEvent =
  | { type: "text"; delta: string }
  /**
   * `cutOff`: the answer reached its output limit while this call was being written, so
   * its arguments may be unfinished (or not begun: a call opened just before the limit
   * parses as `{}`). The stop that follows says "length".
   */
  | { type: "tool_call"; call: ToolCall; cutOff?: true }
  /**
   * What the call used, once per request that reached the model, also when it ended early
   * (stopped, broken off, failed). `estimated`: the provider never reported it (OpenAI
   * counts only at the end of a stream), so it is counted here (see usage-estimate.ts).
   */
  | { type: "usage"; usage: Usage; estimated?: true }
  /**
   * A sentence for the person: what the request left out to be within the API's limits
   * (images), and why. At the end of the answer, before its usage and stop.
   */
  | { type: "notice"; text: string }
  | { type: "stop"; reason: StopReason };

export type ProviderName = "openai" | "anthropic";

export interface Provider {
  readonly name: ProviderName;
  /**
   * Streams one model response. Retries rate limits and server errors before the first
   * event; throws a `SwitchboardError` (code `llm_*`) when it gives up or the request is bad.
   */
  stream(req: ModelRequest, signal: AbortSignal): AsyncIterable<ModelEvent>;
  /** Lists model ids (used by `doctor`); may throw a `SwitchboardError`. */
  listModels(signal?: AbortSignal): Promise<string[]>;
}
