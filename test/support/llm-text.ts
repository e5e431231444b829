import type { RecordedRequest } from "../emulators/llm/index.js";

type Block = { type?: string; text?: string; content?: unknown };
type Message = { role?: string; content?: unknown };

/** The text of the last message a person wrote (tool results are not people). */
export function lastUserText(req: RecordedRequest): string {
  const messages = req.messages as Message[];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role !== "user") continue;
    if (typeof m.content === "string") return m.content;
    if (Array.isArray(m.content)) {
      // Consecutive user turns may be merged into one message: the newest text block is the person's latest.
      const text = (m.content as Block[]).filter((b) => b.type === "text").map((b) => b.text ?? "");
      if (text.length) return text.at(-1) ?? "";
    }
  }
  return "";
}

/** Tool results sent since the person's last message: how many tool steps this turn has had. */
export function toolResultsSinceUser(req: RecordedRequest): string[] {
  const messages = req.messages as Message[];
  const out: string[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role === "tool") out.unshift(String(m.content));
    else if (m?.role === "user" && Array.isArray(m.content)) {
      const results = (m.content as Block[]).filter((b) => b.type === "tool_result");
      if (results.length === 0) break;
      for (const r of results.reverse()) out.unshift(resultText(r.content));
    } else if (m?.role === "user") break;
  }
  return out;
}

function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return (content as Block[]).map((b) => b.text ?? "").join("");
  return "";
}

/** True when the request asks for an answer without tools (the loop's final step). */
export function toolsForbidden(req: RecordedRequest): boolean {
  const choice = req.body.tool_choice as string | { type?: string } | undefined;
  return choice === "none" || (typeof choice === "object" && choice?.type === "none");
}

export function isTitleRequest(req: RecordedRequest): boolean {
  return /\btitle\b/i.test(req.system) && req.toolNames.length === 0;
}
