import type { RecordedRequest, ScriptedTurn } from "../emulators/llm/index.js";
import { isTitleRequest, lastUserText, toolResultsSinceUser } from "./llm-text.js";

/**
 * The model of the per-user sign-in tests: calls the server's whoami when it is offered,
 * else its sign-in tool ("3 whoami" makes three calls at once); then reports what the
 * tools said as "Done: …".
 */
export function perUserModel(req: RecordedRequest): ScriptedTurn {
  if (isTitleRequest(req)) return { text: "Per user" };
  const results = toolResultsSinceUser(req);
  if (results.length > 0) return { text: `Done: ${results.join(" | ")}` };
  if (!/whoami/.test(lastUserText(req))) return { text: "Say whoami." };
  const name = req.toolNames.includes("mine__whoami") ? "mine__whoami" : "mine__sign_in";
  const n = Number(/(\d+) whoami/.exec(lastUserText(req))?.[1] ?? 1);
  // Distinct arguments: the same call twice in a step is refused as a loop.
  return { toolCalls: Array.from({ length: n }, (_, i) => ({ id: `c${i}`, name, arguments: { call: i } })) };
}

/** The browser: follows the sign-in link through the server's consent to our callback. */
export async function consent(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { redirect: "follow" });
  return { status: res.status, text: await res.text() };
}

/** The first link in a message (Slack escapes & as &amp;). */
export const linkIn = (text: string) => /(http[^\s>|)]+)/.exec(text)?.[1]?.replace(/&amp;/g, "&");
