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

export type StopReason = "end" | "tool_calls" | "length" | "other";

export type ModelEvent =
  | { type: "text"; delta: string }
  | { type: "tool_call"; call: ToolCall }
  | { type: "usage"; usage: Usage }
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
