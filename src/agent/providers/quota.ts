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
