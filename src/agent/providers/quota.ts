import { modelFetch } from "./model-fetch.js";

/**
 * An account out of credit or over its quota, as each API says it: OpenAI's type and
 * code "insufficient_quota" (a 429), Anthropic's billing_error (402) and its 400 "Your
 * credit balance is too low to access the Anthropic API", a gateway's 402 Payment
 * Required (OpenRouter's "Insufficient credits"). Only an operator can end it.
 */
export function isQuotaError(e: {
  status: number | undefined;
  type: string | undefined;
  code: string | undefined;
  detail: string;
}): boolean {
  if (e.status === 402 || e.type === "billing_error") return true;
  if (e.type === "insufficient_quota" || e.code === "insufficient_quota") return true;
  return /credit balance is too low/i.test(e.detail);
}

/**
 * The OpenAI SDK's fetch: `modelFetch`, with an exhausted quota's 429 marked
 * `x-should-retry: false`. OpenAI answers it with a 429 as it does a rate limit, and the SDK
 * retries every 429 unless that header says not to (its own rule, which no option changes):
 * each retry waits its back-off only to be refused again, and the person waits for it.
 */
export async function openAIFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const response = await modelFetch(input, init);
  if (response.status !== 429) return response;
  // An error's body is a few hundred bytes of JSON: read here, handed on whole.
  const text = await response.text();
  const headers = new Headers(response.headers);
  if (/"(type|code)"\s*:\s*"insufficient_quota"/.test(text)) headers.set("x-should-retry", "false");
  return new Response(text, { status: response.status, statusText: response.statusText, headers });
}
