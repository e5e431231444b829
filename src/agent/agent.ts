import type { Config } from "../config.js";
import { SwitchboardError, toUserFacing } from "../core/errors.js";
import type { AgentEvent } from "../core/events.js";
import { addUsage, type ChatMessage, type UserMessage, type UserPart } from "../core/messages.js";
import { log } from "../log.js";
import type { ToolEntry, ToolHub } from "../mcp/types.js";
import type { Session, SessionRepository } from "../store/sessions.js";
import { codeBlockArtifacts } from "./artifacts.js";
import { buildPrompt, countTokens, modelLimits, renderSystemPrompt } from "./context.js";
import { runToolLoop } from "./loop.js";
import { compress, needsCompression } from "./memory.js";
import type { Provider } from "./providers/provider.js";
import { makeTitle } from "./title.js";

export interface AgentDeps {
  config: Config;
  hub: ToolHub;
  /** The provider that serves a model (OpenAI or Anthropic, native or text tool protocol). */
  providerFor: (model: string) => Provider;
  sessions: SessionRepository;
}

export interface TurnInput {
  session: Session;
  user: { id: string; name?: string };
  text: string;
  /** Images for models with vision; not stored in the session. */
  parts?: UserPart[];
  platform: string;
  channel: string;
  signal: AbortSignal;
}

export interface TurnSummary {
  toolCalls: number;
  steps: number;
  ok: boolean;
}

/** One turn: context -> loop -> events -> persist -> after-turn jobs (title, compression). */
export class Agent {
  constructor(private readonly deps: AgentDeps) {}

  private catalogTokens = { json: "", tokens: 0 };

  /** Tokens the tool specs take; the catalog rarely changes, so the count is kept until it does. */
  private toolsTokens(tools: ToolEntry[]): number {
    const json = JSON.stringify(tools.map((t) => [t.name, t.description, t.inputSchema]));
    if (json !== this.catalogTokens.json) this.catalogTokens = { json, tokens: countTokens(json) };
    return this.catalogTokens.tokens;
  }

  modelFor(session: Session): string {
    return session.settings.model ?? this.deps.config.llm.model;
  }

  async *runTurn(input: TurnInput): AsyncGenerator<AgentEvent, TurnSummary> {
    const { config, sessions, hub } = this.deps;
    const { session } = input;
    const current: UserMessage = { role: "user", content: input.text };
    if (input.user.name) current.author = input.user.name;

    if (input.text.length > config.agent.maxUserMessageChars) {
      yield {
        type: "error",
        error: {
          code: "input_too_large",
          message: `Your message has ${input.text.length.toLocaleString("en")} characters; I can take at most ${config.agent.maxUserMessageChars.toLocaleString("en")}. Please shorten it or attach it as a file.`,
        },
      };
      return { toolCalls: 0, steps: 0, ok: false };
    }

    const model = this.modelFor(session);
    let summary: TurnSummary = { toolCalls: 0, steps: 0, ok: false };
    let answer = "";
    try {
      const provider = this.deps.providerFor(model);
      const limits = modelLimits(config, model);
      const tools = hub.tools(session.settings.servers);
      const system = renderSystemPrompt(config, {
        model,
        platform: input.platform,
        channel: input.channel,
        user: input.user.name ?? input.user.id,
      });
      const toolsTokens = this.toolsTokens(tools);
      const prompt = buildPrompt({
        system,
        summary: session.summary,
        pinned: config.memory.pinned,
        history: session.messages,
        current: input.parts?.length ? { ...current, parts: input.parts } : current,
        limits,
        toolsTokens,
      });
      const result = yield* runToolLoop(
        {
          provider,
          hub,
          model,
          maxSteps: config.agent.maxSteps,
          repeatLimit: config.agent.repeatLimit,
          maxOutputTokens: limits.maxOutputTokens,
          temperature: config.llm.temperature,
          budgetTokens: limits.contextWindow - limits.maxOutputTokens - toolsTokens,
          signal: input.signal,
        },
        { system: prompt.system, messages: prompt.messages, tools },
      );
      answer = result.text;
      session.messages.push(current, ...result.added);
      session.usage = addUsage(session.usage, result.usage);
      session.turns += 1;
      await sessions.save(session);
      for (const artifact of codeBlockArtifacts(answer, config.agent.codeBlockArtifactLines)) {
        yield { type: "artifact", artifact };
      }
      summary = { toolCalls: result.toolCalls, steps: result.steps, ok: true };
      yield { type: "done", usage: result.usage };
    } catch (err) {
      if (!(err instanceof SwitchboardError)) log.error({ err, key: session.key }, "turn failed");
      // Keep what the user said, so a retry ("try again") has the context.
      if (!(err instanceof SwitchboardError && err.code === "input_too_large")) {
        session.messages.push(current);
        await sessions.save(session).catch((e: unknown) => log.error({ err: e }, "could not save session"));
      }
      yield { type: "error", error: toUserFacing(err) };
      return summary;
    }

    yield* this.afterTurn(session, input.text, answer, model);
    return summary;
  }

  /** Runs once the answer is delivered (the dispatcher finishes the reply on `done`). */
  private async *afterTurn(
    session: Session,
    userText: string,
    answer: string,
    model: string,
  ): AsyncGenerator<AgentEvent> {
    if (!session.title) {
      const title = await this.title(session, { user: userText, assistant: answer });
      yield { type: "title", title };
    }
    await this.compact(session, false).catch((err: unknown) =>
      log.warn({ err, key: session.key, model }, "compression failed; will retry next turn"),
    );
  }

  async title(session: Session, exchange?: { user: string; assistant: string }): Promise<string> {
    const first = exchange ?? firstExchange(session.messages);
    const model = this.deps.config.models.title ?? this.modelFor(session);
    const title = await makeTitle(first, { provider: this.deps.providerFor(model), model });
    session.title = title;
    await this.deps.sessions.save(session);
    return title;
  }

  /** Compresses when over budget, or always with `force` (the /compact command). */
  async compact(
    session: Session,
    force: boolean,
  ): Promise<{ compressed: boolean; archived: number; ms: number }> {
    const { config, sessions } = this.deps;
    const model = config.models.summary ?? this.modelFor(session);
    const limits = modelLimits(config, this.modelFor(session));
    if (!force && !needsCompression(session, config, limits))
      return { compressed: false, archived: 0, ms: 0 };
    return compress(
      session,
      { provider: this.deps.providerFor(model), model, sessions, config, limits },
      { force },
    );
  }
}

function firstExchange(messages: ChatMessage[]): { user: string; assistant: string } {
  const user = messages.find((m) => m.role === "user")?.content ?? "";
  const assistant = messages.find((m) => m.role === "assistant" && m.content)?.content ?? "";
  return { user, assistant };
}
