/**
 * A refusal that asks for a long wait before the next request: a daily limit (OpenAI's
 * "tokens per day (TPD)" or "requests per day (RPD)", "Please try again in 2h14m5s"), a
 * Retry-After of minutes or hours on a 429 or a 503. Both SDKs sleep for whatever
 * Retry-After says before they try again (the OpenAI SDK without even listening to the
 * turn's abort), so a person would look at "thinking…" for an hour and then get the same
 * refusal. Past `LONG_WAIT_MS` the request is not retried: the person is told at once when
 * the model will answer again.
 */
export const LONG_WAIT_MS = 30_000;

/** Set on such a response for the error mapping (see errors.ts): the wait asked, in ms. */
export const WAIT_HEADER = "x-switchboard-wait-ms";

/** The statuses the SDKs retry that a server may send with a Retry-After. */
const RETRIED = new Set([408, 409, 429, 500, 502, 503, 504, 529]);

/** OpenAI's wording in a rate limit's message: "try again in 1h2m3.5s", "in 6m0s", "in 20ms". */
const TRY_AGAIN = /\btry again in\s+((?:\d+(?:\.\d+)?(?:h|ms|m|s))+)/i;
const PART = /(\d+(?:\.\d+)?)(h|ms|m|s)/g;
const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };

function fromMessage(detail: string): number | undefined {
  const match = TRY_AGAIN.exec(detail);
  if (!match?.[1]) return undefined;
  let ms = 0;
  for (const [, n, unit] of match[1].matchAll(PART)) ms += Number(n) * (UNIT_MS[unit ?? "s"] ?? 0);
  return ms;
}

/** The wait a refusal asks for: its headers as the SDKs read them, else its message's words. */
export function waitAsked(headers: Headers, detail = ""): number | undefined {
  const ms = Number.parseFloat(headers.get("retry-after-ms") ?? "");
  if (ms > 0) return ms;
  const after = headers.get("retry-after");
  if (after) {
    const seconds = Number.parseFloat(after);
    if (!Number.isNaN(seconds)) return seconds > 0 ? seconds * 1_000 : undefined;
    const until = Date.parse(after) - Date.now();
    if (until > 0) return until;
  }
  return fromMessage(detail);
}

/**
 * The response as the SDK is to see it: one that asks for a long wait is marked not to be
 * retried (`x-should-retry: false`, which both SDKs obey) and carries the wait. Its body (an
 * error's few hundred bytes of JSON) is read here and handed on whole.
 */
export async function withoutLongWaits(
  response: Response,
  /** Another refusal no wait ends, told by the provider's error body (OpenAI's 429s, see openai-fetch.ts). */
  final?: (status: number, body: string) => boolean,
): Promise<Response> {
  if (!RETRIED.has(response.status)) return response;
  const text = await response.text();
  const headers = new Headers(response.headers);
  const wait = waitAsked(headers, messageOf(text));
  if (wait !== undefined && wait > LONG_WAIT_MS) {
    headers.set("x-should-retry", "false");
    headers.set(WAIT_HEADER, String(Math.round(wait)));
  } else if (final?.(response.status, text)) headers.set("x-should-retry", "false");
  return new Response(text, { status: response.status, statusText: response.statusText, headers });
}

/** The message of an error body in either provider's shape (`{ error: { message } }`), or the text. */
export function messageOf(body: string): string {
  try {
    const error = (JSON.parse(body) as { error?: { message?: unknown } } | null)?.error;
    return typeof error?.message === "string" ? error.message : "";
  } catch {
    return body.slice(0, 500);
  }
}

/** "45 s", "12 min", "2 h 14 min": rounded up, never "0". */
export function waitText(ms: number): string {
  const seconds = Math.ceil(ms / 1_000);
  if (seconds < 90) return `${seconds} s`;
  const minutes = Math.ceil(seconds / 60);
  const h = Math.floor(minutes / 60);
  return h > 0 ? `${h} h ${minutes % 60} min` : `${minutes} min`;
}

/** The wait stamped on an SDK error's response by `withoutLongWaits`, if any. */
export function stampedWait(headers: Headers | Record<string, string> | undefined): number | undefined {
  const value = headers instanceof Headers ? headers.get(WAIT_HEADER) : headers?.[WAIT_HEADER];
  const ms = Number(value ?? Number.NaN);
  return ms > 0 ? ms : undefined;
}
