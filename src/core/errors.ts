/**
 * Errors that cross a module boundary carry a code (for logs, metrics and tests) and a
 * sentence for the person in the chat. Neither ever contains a token or a key.
 */
export type ErrorCode =
  | "config_invalid"
  | "llm_rate_limited"
  | "llm_quota"
  | "llm_unavailable"
  | "llm_auth"
  | "llm_bad_request"
  | "llm_context_length"
  | "llm_request_too_large"
  | "llm_aborted"
  | "input_too_large"
  | "tool_failed"
  | "store_unavailable"
  | "platform_error"
  | "interrupted"
  | "stopped"
  | "internal";

export class SwitchboardError extends Error {
  readonly code: ErrorCode;
  /** What the user sees: what happened and what to do. */
  readonly userMessage: string;

  constructor(code: ErrorCode, message: string, options: { userMessage?: string; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = "SwitchboardError";
    this.code = code;
    this.userMessage = options.userMessage ?? message;
  }
}

export interface UserFacingError {
  code: ErrorCode;
  message: string;
}

export function toUserFacing(err: unknown): UserFacingError {
  if (err instanceof SwitchboardError) return { code: err.code, message: err.userMessage };
  return {
    code: "internal",
    message: "Something went wrong on my side while answering. Please try again in a moment.",
  };
}
