import {
  APIUserAbortError as AnthropicAbortError,
  APIError as AnthropicAPIError,
  APIConnectionError as AnthropicConnectionError,
  APIConnectionTimeoutError as AnthropicTimeoutError,
} from "@anthropic-ai/sdk";
import {
  APIUserAbortError as OpenAIAbortError,
  APIError as OpenAIAPIError,
  APIConnectionError as OpenAIConnectionError,
  APIConnectionTimeoutError as OpenAITimeoutError,
} from "openai";
import { SwitchboardError } from "../../core/errors.js";
import { scrub } from "../../log.js";
import { stampedWait, waitText } from "./long-waits.js";
import { perMinuteExcess, perMinuteSentence } from "./per-minute-limit.js";
import type { ProviderName } from "./provider.js";
import { isQuotaError } from "./quota.js";

export interface ErrorContext {
  provider: ProviderName;
  /** Requests made in total (the SDK's own retries included), for the user's sentence. */
  attempts: number;
}

const KEY_VAR: Record<ProviderName, string> = { openai: "OPENAI_API_KEY", anthropic: "ANTHROPIC_API_KEY" };

/** Wording differs between OpenAI, Anthropic, vLLM, Ollama, llama.cpp and LM Studio; this covers them. */
const CONTEXT_LENGTH =
  /context[ _-]?(length|window)|maximum context|prompt is too long|input is too long|too many tokens|exceeds? the (model'?s? )?(context|maximum)|exceeds? context limit|reduce the length|n_ctx/i;

interface ApiErrorShape {
  status: number | undefined;
  type: string | undefined;
  code: string | undefined;
  detail: string;
}

function apiErrorShape(err: OpenAIAPIError | AnthropicAPIError): ApiErrorShape {
  const type = err.type ?? undefined;
  const code = err instanceof OpenAIAPIError ? (err.code ?? undefined) : (err.errorCode ?? undefined);
  const apiMessage = err instanceof AnthropicAPIError ? (err.apiMessage ?? err.message) : err.message;
  return { status: err.status, type, code, detail: scrub(apiMessage).slice(0, 300) };
}

const tried = (attempts: number) => (attempts > 1 ? `I tried ${attempts} times` : "I tried once");

export function abortedError(cause?: unknown): SwitchboardError {
  return new SwitchboardError("llm_aborted", "The model request was aborted.", {
    userMessage: "The answer was stopped before it finished.",
    cause,
  });
}

/** A stream that failed after part of the answer was already shown: never repeated silently. */
export function brokeOffError(provider: ProviderName, cause?: unknown): SwitchboardError {
  return new SwitchboardError(
    "llm_unavailable",
    `${provider} stream failed after the answer had started: ${describe(cause)}`,
    {
      userMessage:
        "The language model's answer broke off midway (the connection dropped). Please ask again; what you see above is incomplete.",
      cause,
    },
  );
}

export function unavailableError(ctx: ErrorContext, why: string, cause?: unknown): SwitchboardError {
  return new SwitchboardError("llm_unavailable", `${ctx.provider}: ${why} (${ctx.attempts} attempts)`, {
    userMessage: `The language model service is not answering properly right now (${why}); ${tried(ctx.attempts)}. Please try again in a few minutes.`,
    cause,
  });
}

function describe(cause: unknown): string {
  if (cause instanceof Error) return scrub(cause.message).slice(0, 300);
  return cause === undefined ? "unknown cause" : scrub(String(cause)).slice(0, 300);
}

/** Maps whatever an SDK threw into a `SwitchboardError` with a sentence for the chat. */
export function toProviderError(err: unknown, ctx: ErrorContext): SwitchboardError {
  if (err instanceof SwitchboardError) return err;
  if (err instanceof OpenAIAbortError || err instanceof AnthropicAbortError) return abortedError(err);
  if (err instanceof Error && err.name === "AbortError") return abortedError(err);
  if (err instanceof OpenAITimeoutError || err instanceof AnthropicTimeoutError) {
    return new SwitchboardError("llm_unavailable", `${ctx.provider} request timed out`, {
      userMessage: `The language model took too long to answer; ${tried(ctx.attempts)}. Please try again, perhaps with a shorter request.`,
      cause: err,
    });
  }
  if (err instanceof OpenAIConnectionError || err instanceof AnthropicConnectionError) {
    return new SwitchboardError("llm_unavailable", `${ctx.provider} connection failed: ${describe(err)}`, {
      userMessage: `I could not reach the language model service; ${tried(ctx.attempts)}. Please try again in a few minutes, or ask an admin to check that the LLM server is up and its address is right.`,
      cause: err,
    });
  }
  if (err instanceof OpenAIAPIError || err instanceof AnthropicAPIError) return fromApiError(err, ctx);
  return unavailableError(ctx, describe(err), err);
}

function fromApiError(err: OpenAIAPIError | AnthropicAPIError, ctx: ErrorContext): SwitchboardError {
  const shape = apiErrorShape(err);
  const { status, type, code, detail } = shape;
  const label = status ? `HTTP ${status}` : (type ?? code ?? "stream error");
  const message = `${ctx.provider} ${label}: ${detail}`;

  // Before the rate limit: OpenAI sends it as a 429 too, and no wait ends it.
  if (isQuotaError(shape)) {
    return new SwitchboardError("llm_quota", message, {
      userMessage: `The language model service will not answer: its account is out of credit or has used up its quota, so trying again will not help. An operator needs to add credit or raise the quota on that account, or set ${KEY_VAR[ctx.provider]} to a key of an account that has some.`,
      cause: err,
    });
  }
  // Also before the rate limit: a 429 (Groq: a 413) for one request over the per-minute limit.
  const excess = isOverPerMinute(shape);
  if (excess) {
    return new SwitchboardError("llm_request_too_large", message, {
      userMessage: perMinuteSentence(excess),
      cause: err,
    });
  }
  const wait = stampedWait(err.headers);
  if (wait !== undefined) return longWaitError(shape, message, wait, err);
  if (status === 429 || type === "rate_limit_error") {
    return new SwitchboardError("llm_rate_limited", message, {
      userMessage: `The language model is rate-limited right now; ${tried(ctx.attempts)}. Please try again in a minute.`,
      cause: err,
    });
  }
  if (status === 401 || status === 403 || /authentication|permission/.test(type ?? "")) {
    return new SwitchboardError("llm_auth", message, {
      userMessage: `The language model service refused my credentials (${label}). An admin needs to check ${KEY_VAR[ctx.provider]} and the account's access to this model.`,
      cause: err,
    });
  }
  // Before the context length: a 413 is about bytes (files and images), and "start a new
  // thread" would not help a message that carries them.
  if (status === 413 || type === "request_too_large") {
    return new SwitchboardError("llm_request_too_large", message, {
      userMessage:
        "My request to the language model was too large for its service to accept, most likely because of too many or too large files or images sent with it. Please send fewer or smaller files or images at a time, or paste only the part that matters.",
      cause: err,
    });
  }
  if (isContextLength(shape)) {
    return new SwitchboardError("llm_context_length", message, {
      userMessage:
        "This conversation is too long for the model's context window. Please start a new thread, or switch to a model with a larger context.",
      cause: err,
    });
  }
  // An error inside a stream has no status: only its type tells a refused request from a failing service.
  const refused = status === undefined && /invalid_request/.test(type ?? "");
  if (!refused && (status === undefined || status >= 500 || status === 408 || status === 409)) {
    return unavailableError(ctx, label, err);
  }
  if (status === 404) {
    return new SwitchboardError("llm_bad_request", message, {
      userMessage: `The language model service does not know the model or endpoint I asked for (${label}: ${detail}). An admin needs to check the model name and the server address.`,
      cause: err,
    });
  }
  return new SwitchboardError("llm_bad_request", message, {
    userMessage: `The language model rejected my request (${label}: ${detail}). Please try rephrasing; if it keeps happening, an admin needs to check the model settings.`,
    cause: err,
  });
}

/** Refused with a wait too long to keep the person waiting (see long-waits.ts): asked once, and said when. */
function longWaitError(
  shape: ApiErrorShape,
  message: string,
  wait: number,
  cause: unknown,
): SwitchboardError {
  const when = `in about ${waitText(wait)}`;
  const daily = /\bper day\b/i.test(shape.detail) ? " (its daily limit is used up)" : "";
  if (shape.status === 429) {
    return new SwitchboardError("llm_rate_limited", message, {
      userMessage: `The language model is rate-limited${daily} and will take requests again ${when}, so I did not wait. Please try again then, or ask an operator to raise the account's limits.`,
      cause,
    });
  }
  return new SwitchboardError("llm_unavailable", message, {
    userMessage: `The language model service is unavailable (HTTP ${shape.status}) and asks to be tried again ${when}, so I did not wait. Please try again then.`,
    cause,
  });
}

function isOverPerMinute({ status, detail }: ApiErrorShape) {
  const asRateLimit = status === undefined || status === 429 || status === 413;
  return asRateLimit ? perMinuteExcess(detail) : undefined;
}

function isContextLength({ status, type, code, detail }: ApiErrorShape): boolean {
  if (code === "context_length_exceeded") return true;
  const clientSide = status === 400 || status === 422 || type === "invalid_request_error";
  return clientSide && CONTEXT_LENGTH.test(detail);
}

/**
 * Whether an error thrown while reading a stream's body (after the HTTP response began) is
 * worth a fresh request. The SDKs never retry these: they already returned the response.
 */
export function isTransientStreamError(err: unknown): boolean {
  if (err instanceof OpenAIAbortError || err instanceof AnthropicAbortError) return false;
  if (err instanceof OpenAIAPIError || err instanceof AnthropicAPIError) {
    const shape = apiErrorShape(err);
    const { status, type, code } = shape;
    if (isOverPerMinute(shape)) return false;
    if (status !== undefined) return status >= 500 || status === 429;
    const kind = `${type ?? ""} ${code ?? ""}`;
    return !/invalid_request|authentication|permission|billing|insufficient_quota|not_found|context_length|request_too_large/.test(
      kind,
    );
  }
  // Body read failures surface as plain errors (undici's "terminated", ECONNRESET, bad SSE JSON).
  return err instanceof Error;
}
