import { log } from "../log.js";
import type { ToolEntry } from "../mcp/types.js";
import { withTimeout } from "../signals.js";
import type { Provider } from "./providers/provider.js";
import { withoutThinking } from "./providers/think.js";

/** The router is a convenience: a slow one is skipped and everything is offered. */
const ROUTER_TIMEOUT_MS = 10_000;
const TOOLS_LISTED = 8;
const DESCRIPTION_CHARS = 80;
const MESSAGE_CHARS = 600;

export const ROUTER_SYSTEM = [
  "You choose which tool servers an assistant needs to answer a person's latest message.",
  "Reply with the names of the servers it needs, separated by commas, or NONE when it can answer without any tool.",
  "Reply with the names or NONE only, nothing else.",
].join("\n");

/** A server as the router sees it: its name and its first tools, briefly. */
function serverLine(name: string, tools: readonly ToolEntry[]): string {
  const listed = tools
    .slice(0, TOOLS_LISTED)
    .map((t) => (t.description ? `${t.tool} (${t.description.slice(0, DESCRIPTION_CHARS)})` : t.tool));
  const more = tools.length > TOOLS_LISTED ? `, and ${tools.length - TOOLS_LISTED} more` : "";
  return `- ${name}: ${listed.join("; ")}${more}`;
}

/** The router's question: the servers, then the conversation with its latest message last. */
export function routerPrompt(
  byServer: ReadonlyMap<string, readonly ToolEntry[]>,
  texts: readonly string[],
): string {
  const [latest = "", ...earlier] = texts;
  const cut = (t: string) => (t.length > MESSAGE_CHARS ? `${t.slice(0, MESSAGE_CHARS)}…` : t);
  return [
    "Tool servers:",
    ...[...byServer].map(([name, tools]) => serverLine(name, tools)),
    "",
    ...(earlier.length > 0 ? ["Earlier messages:", ...earlier.reverse().map((t) => `> ${cut(t)}`), ""] : []),
    `Latest message: ${cut(latest)}`,
  ].join("\n");
}

/** The servers named in the router's answer; an empty set for NONE; undefined when it named nothing it could mean. */
export function parseRoute(raw: string, servers: readonly string[], model = ""): Set<string> | undefined {
  const text = withoutThinking(raw, model).toLowerCase();
  const named = servers.filter((name) => {
    const escaped = name.toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    return new RegExp(`(^|[^a-z0-9_-])${escaped}($|[^a-z0-9_-])`).test(text);
  });
  if (named.length > 0) return new Set(named);
  return /\bnone\b/.test(text) ? new Set() : undefined;
}

/**
 * Which tool servers a turn needs, asked of a small model before the turn (as the seeds'
 * router does): a turn that needs none is offered no tools, one that needs two is offered
 * only theirs. Never throws: an error, a timeout or an answer that names nothing known
 * returns undefined, and the turn is offered tools as without a router.
 */
export async function routeTools(
  tools: readonly ToolEntry[],
  texts: readonly string[],
  deps: { provider: Provider; model: string; signal?: AbortSignal },
): Promise<Set<string> | undefined> {
  const byServer = new Map<string, ToolEntry[]>();
  for (const tool of tools) byServer.set(tool.server, [...(byServer.get(tool.server) ?? []), tool]);
  if (byServer.size === 0) return undefined;
  const signal = withTimeout(ROUTER_TIMEOUT_MS, deps.signal);
  try {
    let raw = "";
    const stream = deps.provider.stream(
      {
        model: deps.model,
        system: ROUTER_SYSTEM,
        messages: [{ role: "user", content: routerPrompt(byServer, texts) }],
        tools: [],
        // Room for reasoning models, which spend output tokens before the answer.
        maxOutputTokens: 256,
      },
      signal,
    );
    for await (const event of stream) if (event.type === "text") raw += event.delta;
    const route = parseRoute(raw, [...byServer.keys()], deps.model);
    if (!route)
      log.warn({ model: deps.model }, "the tool router named no known server; every tool is offered");
    return route;
  } catch (err) {
    if (deps.signal?.aborted) return undefined;
    log.warn({ err, model: deps.model }, "the tool router failed; every tool is offered");
    return undefined;
  }
}
