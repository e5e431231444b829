/**
 * The one neutral message model inside Switchboard. Providers translate it to and from
 * their wire formats; sessions store it; the agent never sees a provider's own types.
 */

export interface ToolCall {
  id: string;
  /** Provider-safe name (`server__tool`), as the model saw it. */
  name: string;
  arguments: Record<string, unknown>;
  /** Set when the model produced arguments that are not a JSON object; the loop reports it back. */
  invalidArguments?: string;
}

export type UserPart =
  | { type: "text"; text: string }
  | {
      type: "image";
      mimeType: string;
      /** base64 */
      data: string;
      /**
       * The file as its message's text names it in `shownImageNote` ("photo.jpg (image/jpeg,
       * 3.8 MB)"): a provider that must leave the image out rewrites that note to say so.
       */
      label?: string;
    };

/** What a message's text says of an image sent with it as a part. */
export const shownImageNote = (label: string): string =>
  `[Attached image: ${label}, shown to you as an image]`;

/**
 * What it says instead when a provider leaves the image out of the request after all (an
 * API's limits on images): one note, so the model is not told both that it sees the image
 * and that it does not.
 */
export const leftOutImageNote = (label: string, why: string): string =>
  `[Attached image: ${label}; not shown to you, because ${why}]`;

export interface UserMessage {
  role: "user";
  content: string;
  /** Extra input beyond `content` (images from attachments). */
  parts?: UserPart[];
  /** Display name of the author, for threads with several people in them. */
  author?: string;
  /** The turn that asked it: a turn taken over after a crash finds whether it was saved. */
  turn?: string;
}

export interface AssistantMessage {
  role: "assistant";
  content: string;
  toolCalls?: ToolCall[];
}

export interface ToolMessage {
  role: "tool";
  toolCallId: string;
  name: string;
  content: string;
  isError?: boolean;
}

export type ChatMessage = UserMessage | AssistantMessage | ToolMessage;

/** Tokens of model calls as the provider counted them. */
export interface Usage {
  /** Every prompt token, those of the prompt cache included. */
  inputTokens: number;
  outputTokens: number;
  /** Of `inputTokens`, those read from the provider's prompt cache, which cost less. */
  cachedInputTokens?: number;
  /** Of `inputTokens`, those written to the prompt cache (Anthropic), which cost more. */
  cacheWriteTokens?: number;
}

export const zeroUsage = (): Usage => ({ inputTokens: 0, outputTokens: 0 });

export function addUsage(a: Usage, b: Usage): Usage {
  const sum: Usage = {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
  };
  const cached = (a.cachedInputTokens ?? 0) + (b.cachedInputTokens ?? 0);
  const written = (a.cacheWriteTokens ?? 0) + (b.cacheWriteTokens ?? 0);
  if (cached > 0) sum.cachedInputTokens = cached;
  if (written > 0) sum.cacheWriteTokens = written;
  return sum;
}

/**
 * A tool step that waits for people to approve some of its calls: stored with the turn,
 * so that any process can finish the step when the decisions come, and nothing of it is
 * in the session until then (a session never holds calls without their results).
 */
export interface PendingStep {
  /** The model's message with every call of the step. */
  assistant: AssistantMessage;
  /** Ids of the calls that wait for a decision; the step's other calls run with them. */
  asks: string[];
  /** Results of calls that were answered without running (repeats, bad arguments, refusals). */
  settled: ToolMessage[];
}

/** What a person decided for one call: run it, or tell the model why it did not run. */
export type Verdict = { run: true } | { run: false; reason: string };
