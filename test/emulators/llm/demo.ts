import { echoTurn, lastUserText, trailingToolResults } from "./script.js";
import type { RecordedRequest, ScriptedTurn } from "./types.js";

const USE_TOOL = /use tool\s+(\S+)\s*(.*)$/s;

/** A person types the bare tool name; the bot offers `server__tool`, so a unique suffix match is taken. */
function resolveToolName(name: string, offered: string[]): string {
  if (offered.includes(name)) return name;
  const matches = offered.filter((n) => n.endsWith(`__${name}`));
  return matches.length === 1 && matches[0] ? matches[0] : name;
}

/**
 * For trying the bot without an API key: "use tool <name> <json>" calls that tool, a tool
 * result is answered with "Tool said: <result>", a title request gets "Demo: <first
 * words>", anything else is echoed.
 */
export function demoResponder(req: RecordedRequest): ScriptedTurn {
  // The bot's title request: answer with the first words of the conversation it quotes.
  if (req.toolNames.length === 0 && /\btitle\b/i.test(req.system)) {
    const firstLine = lastUserText(req).split("\n")[0] ?? "";
    const words = firstLine
      .replace(/^\W*(user|assistant)\W*/i, "")
      .split(/\s+/)
      .slice(0, 4);
    return { text: `Demo: ${words.join(" ")}` };
  }
  const results = trailingToolResults(req);
  if (results !== undefined) return { text: `Tool said: ${results}` };
  // A request that offers no tools (a summary quoting "use tool …") cannot get a call back.
  const match = req.toolNames.length ? USE_TOOL.exec(lastUserText(req)) : null;
  if (!match?.[1]) return echoTurn(req);
  const rawArgs = (match[2] ?? "").trim() || "{}";
  let args: Record<string, unknown> | string = rawArgs;
  try {
    const parsed: unknown = JSON.parse(rawArgs);
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
      args = parsed as Record<string, unknown>;
    }
  } catch {
    // Left as the raw string on purpose: it shows how the bot handles malformed arguments.
  }
  return { toolCalls: [{ name: resolveToolName(match[1], req.toolNames), arguments: args }] };
}
