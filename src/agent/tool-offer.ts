import type { ChatMessage } from "../core/messages.js";
import { log } from "../log.js";
import type { ToolCallOptions, ToolEntry, ToolHub, ToolOutcome } from "../mcp/types.js";
import { queryOf, type ToolIndex } from "./tool-ranking.js";

/** The built-in tool through which the model finds the tools it was not offered. */
export const SEARCH_TOOL = "search_tools";

/** How much of each request the tool specs may take. */
export interface ToolBudget {
  maxTools: number;
  maxTokens: number;
}

export interface OfferContext {
  /** What the conversation is about, most important first (the current message, then older ones). */
  texts: readonly string[];
  /** Tools already called in the thread, most recent first: they stay offered. */
  used: readonly string[];
}

/**
 * The most tools one request may carry: Chat Completions refuses more ("Invalid 'tools':
 * array too long. Expected an array with maximum length 128"), on every turn. The offer is
 * made apart from the provider, so the cap holds for Anthropic as well, which documents none.
 */
export const MAX_OFFERED_TOOLS = 128;

let warnedOverCap = false;

/** The budget with `maxTools` held to MAX_OFFERED_TOOLS, said once per process. */
function withinToolCap(budget: ToolBudget): ToolBudget {
  if (budget.maxTools <= MAX_OFFERED_TOOLS) return budget;
  if (!warnedOverCap) {
    warnedOverCap = true;
    log.warn(
      { maxTools: budget.maxTools, cap: MAX_OFFERED_TOOLS },
      `agent.toolBudget.maxTools is above ${MAX_OFFERED_TOOLS}, more tools than OpenAI takes in a request; offering at most ${MAX_OFFERED_TOOLS}`,
    );
  }
  return { ...budget, maxTools: MAX_OFFERED_TOOLS };
}

/** How many tools one search makes callable. */
const SEARCH_RESULTS = 8;
const DESCRIPTION_SHOWN = 160;

/**
 * The tools one turn offers the model. A catalog within the budget (and within
 * MAX_OFFERED_TOOLS) is offered whole. Above it, the offer is the tools already used in
 * the thread, then the ones most relevant to the conversation, as many as the budget
 * holds, plus `search_tools`, through which the model makes more of the catalog callable
 * from its next step on.
 */
export class ToolOffer {
  readonly limited: boolean;
  private readonly offered: ToolEntry[] = [];
  /** Offered because the thread used them or the model searched for them: never given up for room. */
  private readonly kept = new Set<string>();
  private tokens = 0;
  private readonly search: ToolEntry;
  private readonly budget: ToolBudget;

  constructor(
    private readonly all: readonly ToolEntry[],
    budget: ToolBudget,
    context: OfferContext,
    /** Built only when the catalog is over the budget. */
    private readonly indexed: () => ToolIndex,
    private readonly sizeOf: (tool: ToolEntry) => number,
  ) {
    this.budget = withinToolCap(budget);
    const total = all.reduce((n, t) => n + sizeOf(t), 0);
    const fits = (b: ToolBudget) => all.length <= b.maxTools && total <= b.maxTokens;
    this.limited = !fits(this.budget);
    this.search = searchEntry(all);
    if (!this.limited) return;
    this.tokens = sizeOf(this.search);
    const byName = new Map(all.map((t) => [t.name, t]));
    for (const name of context.used) {
      const tool = byName.get(name);
      if (tool && this.add(tool)) this.kept.add(tool.name);
    }
    for (const { tool } of indexed().rank(queryOf(context.texts))) this.add(tool);
    // The operator's budget held the whole catalog, only the cap did not: the slots the
    // ranking left free go to the rest of it rather than stay empty.
    if (fits(budget)) for (const tool of all) this.add(tool);
  }

  /** What the model is offered now: grows when it searches. */
  tools(): ToolEntry[] {
    return this.limited ? [...this.offered, this.search] : [...this.all];
  }

  /** Tokens the tool specs may take in any step of this turn. */
  maxTokens(): number {
    return this.limited ? this.budget.maxTokens : this.all.reduce((n, t) => n + this.sizeOf(t), 0);
  }

  /** The hub as this turn's model sees it: the offer as its catalog, `search_tools` answered here. */
  hub(inner: ToolHub): ToolHub {
    return {
      tools: () => this.tools(),
      status: () => inner.status(),
      close: () => inner.close(),
      call: (name: string, args: Record<string, unknown>, opts?: ToolCallOptions) =>
        this.limited && name === SEARCH_TOOL
          ? Promise.resolve(this.find(args))
          : inner.call(name, args, opts),
    };
  }

  /** Runs `search_tools`: the best matches become callable, making room by dropping unused ranked ones. */
  private find(args: Record<string, unknown>): ToolOutcome {
    const started = performance.now();
    const query = typeof args.query === "string" ? args.query : "";
    const result = (ok: boolean, text: string): ToolOutcome => ({
      ok,
      text,
      artifacts: [],
      ms: Math.round(performance.now() - started),
      server: "switchboard",
      tool: SEARCH_TOOL,
    });
    if (!query.trim()) {
      return result(false, `Give ${SEARCH_TOOL} a query: a few words about the task. ${this.serversLine()}`);
    }
    const found = this.indexed()
      .rank(queryOf([query]))
      .map((r) => r.tool);
    if (found.length === 0) {
      return result(true, `No tool matches "${query}". ${this.serversLine()} Try other words.`);
    }
    const made: ToolEntry[] = [];
    for (const tool of found.slice(0, SEARCH_RESULTS)) {
      if (this.offered.includes(tool) || this.makeRoomFor(tool)) {
        this.kept.add(tool.name);
        made.push(tool);
      }
    }
    const more = found.length - made.length;
    const lines = made.map((t) => `- ${t.name}: ${oneLine(t.description)}`);
    return result(
      true,
      `These tools are callable now:\n${lines.join("\n")}` +
        (more > 0 ? `\n${more} more tools match; search with more precise words to reach them.` : ""),
    );
  }

  private add(tool: ToolEntry): boolean {
    if (this.offered.includes(tool)) return true;
    const size = this.sizeOf(tool);
    // One slot and its tokens stay for search_tools itself.
    if (this.offered.length + 1 >= this.budget.maxTools || this.tokens + size > this.budget.maxTokens) {
      return false;
    }
    this.offered.push(tool);
    this.tokens += size;
    return true;
  }

  /** Adds `tool`, dropping the least relevant ranked tools (never kept ones) until it fits. */
  private makeRoomFor(tool: ToolEntry): boolean {
    while (!this.add(tool)) {
      const last = this.offered.findLastIndex((t) => !this.kept.has(t.name));
      if (last < 0) return false;
      const [dropped] = this.offered.splice(last, 1);
      if (dropped) this.tokens -= this.sizeOf(dropped);
    }
    return true;
  }

  private serversLine(): string {
    const counts = new Map<string, number>();
    for (const t of this.all) counts.set(t.server, (counts.get(t.server) ?? 0) + 1);
    const listed = [...counts].map(([server, n]) => `${server} (${n})`).join(", ");
    return `Connected servers and their tools: ${listed}.`;
  }
}

function searchEntry(all: readonly ToolEntry[]): ToolEntry {
  const servers = [...new Set(all.map((t) => t.server))];
  return {
    name: SEARCH_TOOL,
    server: "switchboard",
    tool: SEARCH_TOOL,
    description:
      `Finds tools you do not see yet: ${all.length} tools are connected (servers: ${servers.join(", ")}), ` +
      "and only the ones most relevant to this conversation are shown. Describe the task in a few words; " +
      "the best matches become callable in your next step.",
    inputSchema: {
      type: "object",
      properties: {
        query: {
          type: "string",
          description: "The task, e.g. 'create a pull request' or 'weather forecast'.",
        },
      },
      required: ["query"],
    },
    annotations: { readOnlyHint: true, idempotentHint: true },
  };
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > DESCRIPTION_SHOWN
    ? `${flat.slice(0, DESCRIPTION_SHOWN - 1)}…`
    : flat || "(no description)";
}

/** Tools the thread's assistant messages called, most recent first, each once. */
export function usedTools(messages: readonly ChatMessage[]): string[] {
  const names: string[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role !== "assistant") continue;
    for (const call of m.toolCalls ?? []) {
      if (call.name !== SEARCH_TOOL && !names.includes(call.name)) names.push(call.name);
    }
  }
  return names;
}

/** What the conversation is about for ranking: the current message, then the two user messages before it. */
export function recentAsks(messages: readonly ChatMessage[], current?: string): string[] {
  const texts = current ? [current] : [];
  for (let i = messages.length - 1; i >= 0 && texts.length < 3; i--) {
    const m = messages[i];
    if (m?.role === "user" && typeof m.content === "string" && m.content.trim()) texts.push(m.content);
  }
  return texts;
}
