import { allowedModels, type Config } from "../config.js";
import { SwitchboardError, toUserFacing } from "../core/errors.js";
import type { AgentEvent } from "../core/events.js";
import {
  addUsage,
  type ChatMessage,
  type PendingStep,
  type ToolCall,
  type UserMessage,
  type UserPart,
} from "../core/messages.js";
import { log } from "../log.js";
import type { Elicit, ToolEntry, ToolHub } from "../mcp/types.js";
import type { Session, SessionRepository } from "../store/sessions.js";
import type { Lease } from "../store/state.js";
import { type AnswerRoom, tokenizerMargin, withPromptBudget } from "./answer-room.js";
import { codeBlockArtifacts } from "./artifacts.js";
import {
  buildPrompt,
  countTokens,
  inputBudgetOf,
  modelLimits,
  renderSystemPrompt,
  turnQuestion,
} from "./context.js";
import { type CallGate, type ResumedStep, runToolLoop } from "./loop.js";
import { compress, type FoldPlan, needsCompression, planCompression } from "./memory.js";
import { PromptOverheads } from "./prompt-overheads.js";
import type { Provider } from "./providers/provider.js";
import { makeTitle } from "./title.js";
import { recentAsks, ToolOffer, usedTools } from "./tool-offer.js";
import { ToolIndex } from "./tool-ranking.js";
import { routeTools } from "./tool-router.js";

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
  /**
   * Persists the session as it is now. Called after each tool step (the turn's messages
   * so far are in `session.messages`); the caller saves once more when the turn ends.
   */
  checkpoint?: () => Promise<void>;
  /** Which calls run, wait for approval, or are refused (see LoopOptions.gate). */
  gate?: (call: ToolCall) => CallGate;
  /** Tools the model may be offered here (those that may never run here are left out). */
  offers?: (tool: ToolEntry) => boolean;
  /** Names the turn on its question in the session (see UserMessage.turn). */
  turn?: string;
  /** Told before a step's calls run (see LoopOptions.onCalls). */
  onCalls?: (step: PendingStep) => Promise<void>;
  /** Asks the person what a tool's server requests while it runs (see LoopOptions.elicit). */
  elicit?: Elicit;
  /** Whether the turn may ask the model again after a tool step (see LoopOptions.mayGoOn). */
  mayGoOn?: () => Promise<string | undefined>;
  /**
   * A step finished before the model is asked: after approvals, with their decisions;
   * after a takeover, the step whose calls were cut off (also the question's first step,
   * cut off before the question was saved with it).
   */
  resumed?: ResumedStep;
}

/** A turn going on from its session, which holds its question and finished steps. */
export type ResumeInput = Omit<TurnInput, "text" | "parts">;

export interface TurnSummary {
  toolCalls: number;
  steps: number;
  ok: boolean;
  /** The turn stopped to wait for approvals (its last event was `waiting`). */
  waiting?: boolean;
}

/**
 * One turn: context -> loop -> events. The turn's messages go into `session` as they
 * happen; the caller owns the session and saves it (`checkpoint`, then once at the end).
 * Titles and compression are separate jobs the caller runs after the turn.
 */
export class Agent {
  constructor(private readonly deps: AgentDeps) {}

  /** Tokens of each tool's spec; an entry is the same object until its server's catalog changes. */
  private readonly specTokens = new WeakMap<ToolEntry, number>();
  private catalogIndex: { tools: readonly ToolEntry[]; index: ToolIndex } | undefined;
  private readonly overheads = new PromptOverheads();

  private readonly sizeOf = (tool: ToolEntry): number => {
    let n = this.specTokens.get(tool);
    if (n === undefined) {
      // Counted in OpenAI's wire shape, the wordier of the two protocols', so the budget holds for both.
      n = countTokens(
        JSON.stringify({
          type: "function",
          function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
        }),
      );
      this.specTokens.set(tool, n);
    }
    return n;
  };

  /** The ranking index of this catalog, rebuilt only when the catalog changed. */
  private indexOf(tools: readonly ToolEntry[]): ToolIndex {
    const kept = this.catalogIndex;
    if (kept && kept.tools.length === tools.length && kept.tools.every((t, i) => t === tools[i])) {
      return kept.index;
    }
    const index = new ToolIndex(tools);
    this.catalogIndex = { tools, index };
    return index;
  }

  /** The tools this turn offers: the whole catalog within the budget, else the relevant part and a search. */
  private offerFor(
    session: Session,
    contextWindow: number,
    current: string | undefined,
    offers: ((tool: ToolEntry) => boolean) | undefined,
    route?: ReadonlySet<string>,
  ): ToolOffer {
    const { config, hub } = this.deps;
    const used = usedTools(session.messages);
    const all = hub
      .tools(session.settings.servers)
      .filter((t) => offers?.(t) ?? true)
      // Tools the thread already used stay offered whatever the router said.
      .filter((t) => !route || route.has(t.server) || used.includes(t.name));
    const budget = config.agent.toolBudget;
    return new ToolOffer(
      all,
      { maxTools: budget.maxTools, maxTokens: Math.floor(budget.windowShare * contextWindow) },
      { texts: recentAsks(session.messages, current), used },
      () => this.indexOf(all),
      this.sizeOf,
    );
  }

  /**
   * The thread's model: the one it chose while that one is still allowed, else the
   * configured one. An operator who takes a model off `models.allowed` (too dear, retired)
   * means every thread, also those that chose it before.
   */
  modelFor(session: Session): string {
    const chosen = session.settings.model;
    const { config } = this.deps;
    return chosen !== undefined && allowedModels(config).includes(chosen) ? chosen : config.llm.model;
  }

  async *runTurn(input: TurnInput): AsyncGenerator<AgentEvent, TurnSummary> {
    const { config } = this.deps;
    const current: UserMessage = { role: "user", content: input.text };
    if (input.user.name) current.author = input.user.name;
    if (input.turn) current.turn = input.turn;

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
    return yield* this.run(input, current, input.parts, input.resumed);
  }

  /** Goes on with a turn from its session: the resumed step first, if any, then the model as usual. */
  async *resumeTurn(input: ResumeInput): AsyncGenerator<AgentEvent, TurnSummary> {
    return yield* this.run(input, undefined, undefined, input.resumed);
  }

  private async *run(
    input: Omit<TurnInput, "text" | "parts">,
    current: UserMessage | undefined,
    parts?: UserPart[],
    resumed?: ResumedStep,
  ): AsyncGenerator<AgentEvent, TurnSummary> {
    const { config, hub } = this.deps;
    const { session } = input;
    const model = this.modelFor(session);
    let summary: TurnSummary = { toolCalls: 0, steps: 0, ok: false };
    let kept = false;
    const keep = (...messages: ChatMessage[]) => {
      kept = true;
      session.messages.push(...messages);
    };
    try {
      const provider = this.deps.providerFor(model);
      const margin = tokenizerMargin(config, model, provider.name);
      const limits = withPromptBudget(modelLimits(config, model), margin);
      const routerModel = config.agent.toolRouter.model;
      const route =
        current && routerModel
          ? await routeTools(
              hub.tools(session.settings.servers).filter((t) => input.offers?.(t) ?? true),
              recentAsks(session.messages, current.content),
              { provider: this.deps.providerFor(routerModel), model: routerModel, signal: input.signal },
            )
          : undefined;
      const offer = this.offerFor(session, limits.contextWindow, current?.content, input.offers, route);
      const system = renderSystemPrompt(config, {
        model,
        platform: input.platform,
        channel: input.channel,
        user: input.user.name ?? input.user.id,
      });
      const toolsTokens = offer.maxTokens();
      this.overheads.note(session.key, { system, pinned: config.memory.pinned, toolsTokens });
      const prompt = buildPrompt({
        system,
        summary: session.summary,
        pinned: config.memory.pinned,
        history: session.messages,
        current: current && parts?.length ? { ...current, parts } : current,
        ...(input.turn ? { turn: input.turn } : {}),
        limits,
        toolsTokens,
      });
      if (current) keep(current);
      let stepMessages = 0;
      const result = yield* runToolLoop(
        {
          provider,
          hub: offer.hub(hub),
          model,
          maxSteps: config.agent.maxSteps,
          repeatLimit: config.agent.repeatLimit,
          maxOutputTokens: limits.maxOutputTokens,
          ...answerRoom(margin, limits.contextWindow, toolsTokens),
          temperature: config.llm.temperature,
          budgetTokens: inputBudgetOf(limits) - toolsTokens,
          signal: input.signal,
          gate: input.gate,
          ...(input.onCalls ? { onCalls: input.onCalls } : {}),
          ...(input.mayGoOn ? { mayGoOn: input.mayGoOn } : {}),
          ...(input.elicit ? { elicit: input.elicit, conversation: session.key } : {}),
          owner: `${input.platform}:${input.user.id}`,
          onStep: async (added) => {
            stepMessages += added.length;
            keep(...added);
            await input.checkpoint?.();
          },
        },
        {
          system: prompt.system,
          messages: prompt.messages,
          question: turnQuestion(prompt.messages, input.turn),
          tools: () => offer.tools(),
        },
        resumed,
      );
      keep(...result.added.slice(stepMessages));
      session.usage = addUsage(session.usage, result.usage);
      if (result.pending) {
        yield { type: "waiting", step: result.pending, usage: result.usage };
        return { toolCalls: result.toolCalls, steps: result.steps, ok: true, waiting: true };
      }
      session.turns += 1;
      for (const artifact of codeBlockArtifacts(result.text, config.agent.codeBlockArtifactLines)) {
        yield { type: "artifact", artifact };
      }
      summary = { toolCalls: result.toolCalls, steps: result.steps, ok: true };
      yield { type: "done", usage: result.usage };
    } catch (err) {
      if (!(err instanceof SwitchboardError)) log.error({ err, key: session.key }, "turn failed");
      // Keep what the user said, so a retry ("try again") has the context.
      if (!kept && current) keep(current);
      yield { type: "error", error: toUserFacing(err) };
      return summary;
    }
    return summary;
  }

  /** Whether the thread still needs a title (after its first answer). */
  needsTitle(session: Session): boolean {
    return !session.title && session.messages.some((m) => m.role === "assistant" && m.content);
  }

  /** A title for the thread from its first exchange; changes nothing. */
  async makeTitle(session: Session): Promise<string> {
    const model = this.deps.config.models.title ?? this.modelFor(session);
    return makeTitle(firstExchange(session.messages), { provider: this.deps.providerFor(model), model });
  }

  /** Whether the thread's window is over its budget: a fold is due (the check `planCompaction` begins with). */
  needsCompaction(session: Session): boolean {
    const { config, limits, overhead } = this.compressDeps(session);
    return needsCompression(session, config, limits, overhead);
  }

  /** A fold of the oldest messages when the window is over budget (or always with `force`); changes nothing. */
  planCompaction(session: Session, force = false): Promise<FoldPlan | undefined> {
    return planCompression(session, this.compressDeps(session), { force });
  }

  /** Titles the thread now and saves it (the /title command, under the thread's lock and its `lease`). */
  async title(session: Session, lease?: Lease): Promise<string> {
    const title = await this.makeTitle(session);
    session.title = title;
    await this.deps.sessions.save(session, lease);
    return title;
  }

  /** Compresses when over budget, or always with `force` (the /compact command, saved under `lease`). */
  async compact(
    session: Session,
    force: boolean,
    lease?: Lease,
  ): Promise<{ compressed: boolean; archived: number; ms: number }> {
    return compress(
      session,
      { ...this.compressDeps(session), sessions: this.deps.sessions },
      { force, lease },
    );
  }

  private compressDeps(session: Session) {
    const { config } = this.deps;
    const model = config.models.summary ?? this.modelFor(session);
    return {
      provider: this.deps.providerFor(model),
      model,
      config,
      limits: this.limitsFor(session),
      // The check that plans a fold and the one that says it is due must agree.
      overhead: () => this.overheads.tokens(session.key),
    };
  }

  /** The limits of the thread's own model, whose window the thread must fit (planCompression reads the summariser's itself). */
  private limitsFor(session: Session) {
    const model = this.modelFor(session);
    const { config, providerFor } = this.deps;
    return withPromptBudget(
      modelLimits(config, model),
      tokenizerMargin(config, model, providerFor(model).name),
    );
  }
}

/** The loop's `answerRoom`, for a model whose token count is not o200k (see answer-room.ts). */
function answerRoom(
  margin: number | undefined,
  contextWindow: number,
  toolsTokens: number,
): { answerRoom?: AnswerRoom } {
  return margin === undefined ? {} : { answerRoom: { contextWindow, toolsTokens, margin } };
}

function firstExchange(messages: ChatMessage[]): { user: string; assistant: string } {
  const user = messages.find((m) => m.role === "user")?.content ?? "";
  const assistant = messages.find((m) => m.role === "assistant" && m.content)?.content ?? "";
  return { user, assistant };
}
