import { Agent } from "../../src/agent/agent.js";
import { countTokens, messagesTokens } from "../../src/agent/context.js";
import { createProvider } from "../../src/agent/providers/index.js";
import { type Config, configSchema } from "../../src/config.js";
import type { AgentEvent } from "../../src/core/events.js";
import type { ChatMessage } from "../../src/core/messages.js";
import { runAfterTurn } from "../../src/runtime/after-turn.js";
import type { Reply } from "../../src/runtime/contract.js";
import type { Store } from "../../src/store/index.js";
import { LocalThreadLock } from "../../src/store/locks.js";
import type { Session } from "../../src/store/sessions.js";
import { SessionRepository } from "../../src/store/sessions.js";
import { type TestStores, testStores } from "../../src/store/testing.js";
import {
  LlmEmulator,
  type RecordedRequest,
  type Responder,
  type ScriptedTurn,
} from "../emulators/llm/index.js";
import { lastUserText, trailingToolResults } from "../emulators/llm/script.js";
import { FunctionHub } from "../support/scripted.js";

/**
 * One thread driven through the real Agent, the real OpenAI provider, the LLM emulator,
 * a sqlite store and a scripted echo tool. Used by the memory e2e tests and the benchmark.
 */
export const CHAT_MODEL = "gpt-4o-mini";
export const KEY = "console:memory-e2e";

export type RequestKind = "title" | "summary" | "chat";

export function kindOf(req: RecordedRequest): RequestKind {
  if (req.system.startsWith("You name chat threads")) return "title";
  if (req.system.startsWith("You keep the running summary")) return "summary";
  return "chat";
}

/** The neutral messages an OpenAI-protocol request carried (the author is inside the text). */
export function receivedMessages(req: RecordedRequest): ChatMessage[] {
  return req.messages.flatMap((raw): ChatMessage[] => {
    const m = raw as Record<string, unknown>;
    const text = typeof m.content === "string" ? m.content : "";
    if (m.role === "user") return [{ role: "user", content: text }];
    if (m.role === "tool") {
      return [{ role: "tool", toolCallId: String(m.tool_call_id), name: "", content: text }];
    }
    if (m.role !== "assistant") return [];
    const calls =
      (m.tool_calls as Array<{ id: string; function: { name: string; arguments: string } }>) ?? [];
    return [
      {
        role: "assistant",
        content: text,
        toolCalls: calls.map((c) => ({
          id: c.id,
          name: c.function.name,
          arguments: JSON.parse(c.function.arguments) as Record<string, unknown>,
        })),
      },
    ];
  });
}

/** Prompt tokens of a request as received, counted the way the budget counts them. */
export function receivedTokens(req: RecordedRequest): number {
  const tools =
    (req.body.tools as Array<{ function: { name: string; description: string; parameters: unknown } }>) ?? [];
  const toolsTokens = tools.length
    ? countTokens(
        JSON.stringify(tools.map((t) => [t.function.name, t.function.description, t.function.parameters])),
      )
    : 0;
  return countTokens(req.system) + 4 + toolsTokens + messagesTokens(receivedMessages(req));
}

/** True when every tool result follows the assistant message that made its call. */
export function toolResultsFollowCalls(messages: ChatMessage[]): boolean {
  const open = new Set<string>();
  for (const m of messages) {
    if (m.role === "tool") {
      if (!open.delete(m.toolCallId)) return false;
      continue;
    }
    if (open.size > 0) return false;
    if (m.role === "assistant") for (const c of m.toolCalls ?? []) open.add(c.id);
  }
  return true;
}

/**
 * A model for long conversations: every fifth turn calls the echo tool, answers are a
 * few sentences, summaries are short and numbered, titles come back in quotes.
 */
export function conversationalModel(): { responder: Responder; stats: { summaries: number } } {
  const stats = { summaries: 0 };
  const responder = (req: RecordedRequest): ScriptedTurn => {
    const kind = kindOf(req);
    if (kind === "title") return { text: '"Release planning notes."', chunkSize: 1_000 };
    if (kind === "summary") {
      stats.summaries++;
      return {
        text: `- ROLLING-SUMMARY-${stats.summaries}: ana planned releases; tickets SB-1 to SB-99.`,
        chunkSize: 1_000,
      };
    }
    const results = trailingToolResults(req);
    if (results !== undefined) return { text: `The tool said: ${results.slice(0, 80)}`, chunkSize: 1_000 };
    const asked = lastUserText(req);
    const n = Number(asked.match(/Turn (\d+)/)?.[1] ?? 0);
    if (n % 5 === 0)
      return { toolCalls: [{ name: "util__echo", arguments: { text: `payload for turn ${n}` } }] };
    return {
      text: `Answer ${n}: ${"the release plan moves one step further and ticket SB-42 stays open; ".repeat(3)}`,
      chunkSize: 1_000,
    };
  };
  return { responder, stats };
}

export interface TurnOutcome {
  events: AgentEvent[];
  text: string;
  /** The title the after-turn job gave the thread, if it made one. */
  title?: string;
  /** The session's messages just before the turn. */
  before: ChatMessage[];
}

export class MemoryHarness {
  agent!: Agent;
  private store!: Store;
  sessions!: SessionRepository;
  session!: Session;
  private readonly lock = new LocalThreadLock();
  readonly hub = new FunctionHub({ util__echo: (args) => `echo: ${String(args.text)}` });

  private constructor(
    readonly emu: LlmEmulator,
    readonly stores: TestStores,
    readonly config: Config,
  ) {}

  static async start(
    configInput: Record<string, unknown> = {},
    responder?: Responder,
  ): Promise<MemoryHarness> {
    const config = configSchema.parse({
      llm: { model: CHAT_MODEL, maxRetries: 0 },
      modelSettings: { [CHAT_MODEL]: { contextWindow: 3_000, maxOutputTokens: 500 } },
      ...configInput,
    });
    const emu = await LlmEmulator.start({ responder: responder ?? conversationalModel().responder });
    const h = new MemoryHarness(emu, testStores("sqlite"), config);
    await h.open();
    return h;
  }

  /** Opens the store and builds the agent, as a process start does. */
  async open(): Promise<void> {
    this.store = await this.stores.open();
    this.sessions = new SessionRepository(this.store);
    const provider = createProvider({
      provider: "openai",
      apiKey: "sk-test-memory-e2e",
      baseURL: this.emu.openaiBaseUrl,
      maxRetries: 0,
      timeoutMs: 10_000,
    });
    this.agent = new Agent({
      config: this.config,
      hub: this.hub,
      providerFor: () => provider,
      sessions: this.sessions,
    });
    this.session = await this.sessions.getOrCreate(KEY);
  }

  async turn(
    text: string,
    where: { platform?: string; channel?: string; user?: string } = {},
  ): Promise<TurnOutcome> {
    const before = [...this.session.messages];
    const events: AgentEvent[] = [];
    const run = this.agent.runTurn({
      session: this.session,
      user: { id: "U1", name: where.user ?? "ana" },
      text,
      platform: where.platform ?? "console",
      channel: where.channel ?? "local",
      signal: new AbortController().signal,
      checkpoint: () => this.sessions.save(this.session),
    });
    for await (const e of run) events.push(e);
    await this.sessions.save(this.session);
    const answer = events.map((e) => (e.type === "text" ? e.delta : "")).join("");
    // As the runtime does once the thread's lock is released: title and compression.
    const titles: string[] = [];
    const reply = { title: async (t: string) => void titles.push(t) } as Reply;
    const deps = { agent: this.agent, sessions: this.sessions, lock: this.lock };
    await runAfterTurn(this.session, reply, deps, new AbortController().signal);
    this.session = (await this.sessions.get(KEY)) ?? this.session;
    return { events, text: answer, before, title: titles[0] };
  }

  /** A process restart: the store is closed and opened again, the agent rebuilt, the session reloaded. */
  async restart(): Promise<void> {
    await this.store.close();
    await this.open();
  }

  chatRequests(): RecordedRequest[] {
    return this.emu.requests.filter((r) => kindOf(r) === "chat");
  }

  async close(): Promise<void> {
    await this.emu.close();
    await this.stores.dispose();
  }
}
