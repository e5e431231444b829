/** One scripted tool call; a string `arguments` goes on the wire as-is (to script malformed JSON). */
export interface ScriptedToolCall {
  name: string;
  arguments: Record<string, unknown> | string;
  id?: string;
}

export interface ReplyTurn {
  text?: string;
  toolCalls?: ScriptedToolCall[];
  usage?: TokenCounts;
  /** Characters per text (and tool-argument) delta; default 8. */
  chunkSize?: number;
  /** Pace of streamed chunks: one every `delayMs`, kept whatever the emulator's own lateness (see Pace). */
  delayMs?: number;
  /** How an OpenAI stream sends each call's name (default "first"; see `NameDeltas`). */
  nameDeltas?: NameDeltas;
  /** How an OpenAI stream numbers the calls' `index` (default "distinct"; see `CallIndexes`). */
  callIndexes?: CallIndexes;
  /**
   * OpenAI only: the answer ends with finish_reason "content_filter", as when OpenAI's
   * filter withholds the rest of it (the text scripted, possibly none, is what came before).
   */
  contentFilter?: true;
  /** Anthropic only: the answer ends with stop_reason "refusal", as when Claude declines to go on. */
  refusal?: true;
}

/**
 * "first": whole in the call's first delta, as OpenAI does; "split": in pieces over its
 * first deltas, as a server may that streams the name token by token; "every": whole in
 * every delta of the call, as NVIDIA NIM, some proxies and Gemini's compatible API do.
 */
export type NameDeltas = "first" | "split" | "every";

/**
 * "distinct": 0, 1, 2… as OpenAI does; "zero": 0 for every call, each told apart only by the
 * id in its first delta, as Ollama's OpenAI-compatible server does (ollama/ollama#15457).
 */
export type CallIndexes = "distinct" | "zero";

/**
 * Tokens a response reports. `input` is every prompt token; `cached` (read from the prompt
 * cache) and `cacheWrite` (written to it, Anthropic only) are parts of it, sent as each API
 * does: OpenAI's `prompt_tokens` includes `prompt_tokens_details.cached_tokens`, Anthropic's
 * `input_tokens` leaves out `cache_read_input_tokens` and `cache_creation_input_tokens`.
 */
export interface TokenCounts {
  input: number;
  output: number;
  cached?: number;
  cacheWrite?: number;
}

export interface ErrorTurn {
  error: {
    status: number;
    /** Seconds; sets `retry-after` (and `retry-after-ms`, see `retryHeaders`). */
    retryAfter?: number;
    message?: string;
    /**
     * The error's `type`, by default the status's. OpenAI's "insufficient_quota" (a 429 for
     * an account out of credit or quota) also sets its code and its message.
     */
    type?: string;
    /** OpenAI only: the error's `code`, by default the status's (or the type's). */
    code?: string | null;
    /** Sets `x-should-retry`, which both SDKs obey before their own rules on retrying. */
    shouldRetry?: boolean;
  };
}

/**
 * The stream starts, `afterChars` of `text` are sent, then the connection is dropped; or,
 * with `error`, the server reports that error in the stream and ends it, as OpenAI (a
 * chunk holding `error`) and Anthropic (an `error` event, such as `overloaded_error`) do.
 */
export interface CutTurn {
  cut: { afterChars: number; text: string; error?: { type: string; message: string } };
}

export type ScriptedTurn = ReplyTurn | ErrorTurn | CutTurn;

export interface RecordedRequest {
  protocol: "openai" | "anthropic";
  model: string;
  stream: boolean;
  /** OpenAI: the system (and developer) messages' text; Anthropic: `system` with text blocks joined. */
  system: string;
  /** The raw messages array as received. */
  messages: unknown[];
  toolNames: string[];
  body: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
  /** The prompt's size as the emulator counted it (see `context.ts`), set for every request it received. */
  promptTokens?: number;
  /** The model's context window the request was held to. */
  contextWindow?: number;
  /** Set when the request was refused for not fitting the window: the provider's error message. */
  overflow?: string;
  /** Set when the client closed the connection before the whole answer was sent. */
  abandoned?: boolean;
  /** When the request arrived, and when its response ended (ms since the epoch). */
  receivedAt?: number;
  endedAt?: number;
  /** The token counts the response reports (a complete answer; not errors or cut streams). */
  reported?: TokenCounts;
}

export type Responder = (req: RecordedRequest) => ScriptedTurn | Promise<ScriptedTurn>;

export function isErrorTurn(turn: ScriptedTurn): turn is ErrorTurn {
  return "error" in turn && turn.error !== undefined;
}

export function isCutTurn(turn: ScriptedTurn): turn is CutTurn {
  return "cut" in turn && turn.cut !== undefined;
}

/** A reply turn with every default filled in and the arguments already serialised. */
export interface PlannedReply {
  text: string;
  toolCalls: Array<{ id: string; name: string; argumentsJson: string }>;
  usage: TokenCounts;
  chunkSize: number;
  delayMs: number;
  nameDeltas: NameDeltas;
  callIndexes: CallIndexes;
  /** Cut at the request's output limit: it finishes with "length" / "max_tokens". */
  truncated?: boolean;
  /** Finishes with "content_filter" (OpenAI) or "refusal" (Anthropic) instead. */
  withheld?: true;
}
