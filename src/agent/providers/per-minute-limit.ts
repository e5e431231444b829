/**
 * One request larger than the account's tokens-per-minute limit. OpenAI refuses it with a 429
 * `rate_limit_exceeded` of type "tokens", as it does an ordinary TPM limit, but no wait ends
 * it: "Request too large for gpt-4o in organization org-… on tokens per min (TPM): Limit
 * 30000, Requested 45000. The input or output tokens must be reduced in order to run
 * successfully." An ordinary limit reads "Rate limit reached for … (TPM): Limit 30000,
 * Used 29000, Requested 2000. Please try again in 2s." and passes in a moment. Groq words it
 * "on tokens per minute (TPM)" and sends a 413.
 */
export interface PerMinuteExcess {
  limit?: number;
  requested?: number;
}

const PER_MINUTE = /\btokens per min(?:ute)?\b/i;
const TOO_LARGE = /\bRequest too large for\b/i;
/** Adjacent, with no "Used N" between them: the request alone against the limit. */
const LIMIT_REQUESTED = /\bLimit:?\s*([\d,]+),\s*Requested:?\s*([\d,]+)/i;

const toNumber = (digits: string | undefined) => Number((digits ?? "").replace(/,/g, ""));

/** What the refusal says of the limit and the request, if it is this refusal. */
export function perMinuteExcess(detail: string): PerMinuteExcess | undefined {
  if (!PER_MINUTE.test(detail)) return undefined;
  const match = LIMIT_REQUESTED.exec(detail);
  if (!match) return TOO_LARGE.test(detail) ? {} : undefined;
  const limit = toNumber(match[1]);
  const requested = toNumber(match[2]);
  // "Request too large" without numbers that agree with it is not taken on its word alone.
  if (!(requested > limit)) return undefined;
  return { limit, requested };
}

const fmt = (n: number) => n.toLocaleString("en-US");

export function perMinuteSentence({ limit, requested }: PerMinuteExcess): string {
  const sizes =
    limit !== undefined && requested !== undefined
      ? ` (about ${fmt(requested)} tokens; the limit is ${fmt(limit)} tokens per minute)`
      : "";
  return (
    `My request to the language model was larger than its account allows in one minute${sizes}, so waiting and trying again will not help. ` +
    "To make it smaller, start a fresh conversation with the new command or fold this one into a summary with the compact command (/new or /compact; on Slack, after the bot's slash command), or send fewer or smaller files; otherwise an operator can raise the account's tokens-per-minute limit."
  );
}
