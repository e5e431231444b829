import type { SlackEmulator } from "./index.js";

/** A Web API call as raw HTTP, form-encoded as the WebClient sends it: to test a rule without the SDK. */
export async function rawCall<T = Record<string, unknown>>(
  e: SlackEmulator,
  method: string,
  args: Record<string, string>,
): Promise<{ ok: boolean; error?: string } & T> {
  const res = await fetch(`${e.apiUrl}${method}`, {
    method: "POST",
    headers: { authorization: `Bearer ${e.botToken}`, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(args).toString(),
  });
  return (await res.json()) as { ok: boolean; error?: string } & T;
}
