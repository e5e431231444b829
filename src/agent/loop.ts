import { SwitchboardError } from "../core/errors.js";
import type { AgentEvent } from "../core/events.js";
import {
  type AssistantMessage,
  addUsage,
  type ChatMessage,
  type PendingStep,
  type ToolCall,
  type ToolMessage,
  type Usage,
  type Verdict,
  zeroUsage,
} from "../core/messages.js";
import type { Elicit, ToolEntry, ToolHub, ToolOutcome } from "../mcp/types.js";
import { type AnswerRoom, answerTokens } from "./answer-room.js";
import { callSignature } from "./call-signature.js";
import { turnQuestion } from "./context.js";
import type { ModelRequest, Provider, ToolSpec } from "./providers/provider.js";
import { isWithheld } from "./providers/wire.js";
import { AsyncQueue } from "./queue.js";
import { fitStep } from "./step-budget.js";
import { closingNote, noticesAfter, type StepResponse, streamStep } from "./step-stream.js";
import { cutOffRefusal, errorResult, keptText, startingStep, withoutUnfinished } from "./steps.js";

export interface LoopOptions {
  provider: Provider;
  hub: ToolHub;
  model: string;
  maxSteps: number;
  /** The same call (tool + arguments) this many times in one turn stops the loop. */
  repeatLimit: number;
  maxOutputTokens?: number;
  /** Set when the provider counts tokens otherwise than o200k: each step asks for no more output than the window has left. */
  answerRoom?: AnswerRoom;
  temperature?: number;
  /** Tokens a request may use (window minus answer and tool specs); later steps are trimmed to it. */
  budgetTokens?: number;
  signal: AbortSignal;
  /**
   * Called after each tool step with the messages it added (the assistant's calls and
   * their results, never one without the other), before the next step starts: the turn's
   * owner checkpoints the session here.
   */
  onStep?: (added: ChatMessage[]) => Promise<void>;
  /**
   * Called before a step's calls run, with the step: `asks` are the calls about to run,
   * `settled` the results of the others. The turn's owner records it, so that a process
   * taking the turn over after a crash knows which calls may have run.
   */
  onCalls?: (step: PendingStep) => Promise<void>;
  /**
   * Whether a call may run as it is, must wait for a person's approval, or may not run
   * here at all. Without a gate every call runs.
   */
  gate?: (call: ToolCall) => CallGate;
  /** Asks the person what a tool's server requests while the call runs; without it servers are told the user cannot be asked. */
  elicit?: Elicit;
  /** The conversation's key, so that a server's question reaches only this conversation. */
  conversation?: string;
  /** The person whose turn it is (`platform:user`), for servers where each signs in as themselves. */
  owner?: string;
  /**
   * Asked before each model request after the turn's first: a sentence (a daily budget
   * spent by the tool steps so far) ends the turn there, told to the person, with no more
   * model calls. Checked at the turn's start alone, a tool loop ran on past its cap.
   */
  mayGoOn?: () => Promise<string | undefined>;
}

/** `refuse`: the call is answered with this sentence instead of running. */
export type CallGate = "run" | "ask" | { refuse: string };

/** A step that waited for approvals, with the decisions: the loop finishes it before the next model request. */
export interface ResumedStep {
  step: PendingStep;
  verdicts: Record<string, Verdict>;
}

export interface LoopInput {
  system: string;
  messages: ChatMessage[];
  /** Where the turn's question is in `messages` (see `turnQuestion`); by default, its last user message. */
  question?: number;
  /** The tools offered; a function is asked again at every step (an offer grows when the model searches). */
  tools: ToolEntry[] | (() => ToolEntry[]);
}

export type StopCause = "answer" | "step_limit" | "repeat" | "cut_off" | "waiting" | "budget";

export interface LoopResult {
  /** Messages this turn added: assistant steps and tool results, in order. */
  added: ChatMessage[];
  /** The answer text as the user saw it (all steps' visible text). */
  text: string;
  usage: Usage;
  steps: number;
  toolCalls: number;
  stoppedBy: StopCause;
  /** Set when the loop stopped for approvals (`stoppedBy: "waiting"`). */
  pending?: PendingStep;
}

/** What one model step asked for. Mirrors agents-js's `final_output | run_again` split. */
type StepOutcome =
  | { kind: "final" }
  | { kind: "run_again" }
  | { kind: "force_final"; cause: ForcedCause }
  | { kind: "wait"; step: PendingStep };

type ForcedCause = Exclude<StopCause, "answer" | "waiting" | "budget">;

const FINAL_NOTES: Record<ForcedCause, string> = {
  step_limit:
    "You have used every tool step allowed for this message. Do not call any more tools: answer now with what you have, and say briefly what is still missing.",
  repeat:
    "You repeated the same tool call with the same arguments. Do not call it again: answer now with the results you have.",
  cut_off:
    "Your tool calls were cut off at the output limit again and again, so none of them ran. Do not call any more tools: answer now with what you have, and say that the content was too long to pass to a tool.",
};

export function toolSpecs(tools: ToolEntry[]): ToolSpec[] {
  return tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
}

export async function* runToolLoop(
  opts: LoopOptions,
  input: LoopInput,
  resumed?: ResumedStep,
): AsyncGenerator<AgentEvent, LoopResult> {
  const convo = [...input.messages];
  const added: ChatMessage[] = [];
  const offered = input.tools;
  const toolsNow = typeof offered === "function" ? offered : () => offered;
  const seen = new Map<string, number>();
  let usage = zeroUsage();
  let visible = "";
  const notices = new Set<string>();
  let toolCalls = 0;
  let forced: ForcedCause | undefined;
  // Steps whose call the output limit cut: each costs a whole answer's worth of output.
  let cutSteps = 0;

  const append = (m: ChatMessage) => {
    convo.push(m);
    added.push(m);
  };

  const asked = input.question ?? turnQuestion(convo);
  // Where the turn starts in convo: its question, else the first message added here. Not
  // const: fitStep may leave the oldest earlier messages out of the front of convo.
  let turnStart = asked >= 0 && asked < convo.length ? asked : convo.length;
  let checkpointed = 0;
  if (resumed) {
    toolCalls += yield* finishStep(opts, resumed, append);
    await opts.onStep?.(added.slice(checkpointed));
    checkpointed = added.length;
  }
  for (let step = 1; ; step++) {
    const system = forced ? `${input.system}\n\n${FINAL_NOTES[forced]}` : input.system;
    // A resumed step's results (after approvals) came in before its first request, too.
    if ((step > 1 || resumed) && opts.budgetTokens)
      turnStart -= fitStep(system, convo, turnStart, opts.budgetTokens);
    const request: ModelRequest = {
      model: opts.model,
      system,
      messages: convo,
      tools: toolSpecs(toolsNow()),
      toolChoice: forced ? "none" : "auto",
      maxOutputTokens:
        opts.answerRoom && opts.maxOutputTokens !== undefined
          ? answerTokens(opts.answerRoom, opts.maxOutputTokens, system, convo)
          : opts.maxOutputTokens,
      temperature: opts.temperature,
    };
    const separator = visible && !visible.endsWith("\n") ? "\n\n" : "";
    const stop = step > 1 || resumed ? await opts.mayGoOn?.() : undefined;
    if (stop) {
      yield { type: "text", delta: separator + stop };
      visible += separator + stop;
      return { added, text: visible, usage, steps: step - 1, toolCalls, stoppedBy: "budget" };
    }
    const response = yield* streamStep(opts, request, separator);
    usage = addUsage(usage, response.usage);
    visible += response.text ? separator + response.text : "";
    for (const notice of response.notices) notices.add(notice);

    const outcome = yield* decide(opts, response, request.maxOutputTokens, step, seen, forced, append);
    if (outcome.kind === "wait" || outcome.kind === "final") {
      const note = outcome.kind === "final" ? closingNote(response.stop, visible) : undefined;
      if (note) {
        yield { type: "text", delta: note };
        visible = visible.trim() ? visible + note : note;
      }
      const told = noticesAfter(visible, notices);
      if (told) {
        yield { type: "text", delta: told };
        visible += told;
      }
    }
    if (outcome.kind === "wait") {
      return {
        added,
        text: visible,
        usage,
        steps: step,
        toolCalls,
        stoppedBy: "waiting",
        pending: outcome.step,
      };
    }
    if (outcome.kind === "final") {
      return { added, text: visible, usage, steps: step, toolCalls, stoppedBy: forced ?? "answer" };
    }
    toolCalls += response.calls.length;
    if (outcome.kind === "force_final") forced = outcome.cause;
    // As many as a repeated call is allowed: told to split its content, a model that still
    // cannot is not helped by more tries.
    else if (response.cutOff.length > 0 && ++cutSteps >= opts.repeatLimit) forced = "cut_off";
    await opts.onStep?.(added.slice(checkpointed));
    checkpointed = added.length;
  }
}

async function* decide(
  opts: LoopOptions,
  response: StepResponse,
  outputLimit: number | undefined,
  step: number,
  seen: Map<string, number>,
  forced: StopCause | undefined,
  append: (m: ChatMessage) => void,
): AsyncGenerator<AgentEvent, StepOutcome> {
  // A forced final step may still emit tool calls on servers that ignore tool_choice: they
  // are not run. Nor are those of an answer a content filter or a refusal stopped: the
  // provider stopped it for what it says, calls included, and the turn ends there.
  const content = keptText(response);
  if (forced || isWithheld(response.stop) || response.calls.length === 0) {
    append({ role: "assistant", content });
    return { kind: "final" };
  }
  const cutOff = new Set(response.cutOff);
  const calls = response.calls.map((c) => (cutOff.has(c.id) ? withoutUnfinished(c) : c));
  const assistant: AssistantMessage = { role: "assistant", content, toolCalls: calls };

  let repeated = false;
  const planned = calls.map((call): PlannedCall => {
    // Never run, whatever its arguments parse to; not counted as a repeat either.
    if (cutOff.has(call.id)) return { call, refusal: cutOffRefusal(call, outputLimit) };
    const count = (seen.get(callSignature(call)) ?? 0) + 1;
    seen.set(callSignature(call), count);
    if (count >= opts.repeatLimit) {
      repeated = true;
      return {
        call,
        refusal: `This exact call (${call.name} with the same arguments) was already made ${opts.repeatLimit - 1} times in this turn, so it was not run again. Use the results you already have.`,
      };
    }
    if (call.invalidArguments !== undefined) {
      return {
        call,
        refusal: `The arguments for ${call.name} were not a valid JSON object: ${call.invalidArguments.slice(0, 300)}. Call the tool again with the arguments as one JSON object that matches its input schema.`,
      };
    }
    const gate = opts.gate?.(call) ?? "run";
    if (typeof gate === "object") return { call, refusal: gate.refuse };
    return { call, ask: gate === "ask" };
  });
  const asks = planned.filter((p) => p.ask).map((p) => p.call.id);
  if (asks.length > 0) {
    const settled = planned.flatMap((p) => (p.refusal === undefined ? [] : [errorResult(p.call, p.refusal)]));
    return { kind: "wait", step: { assistant, asks, settled } };
  }
  await opts.onCalls?.(startingStep(assistant, planned));
  append(assistant);
  const results = yield* runCalls(opts, planned);
  for (const r of results) append(r);

  if (repeated) return { kind: "force_final", cause: "repeat" };
  if (step >= opts.maxSteps) return { kind: "force_final", cause: "step_limit" };
  return { kind: "run_again" };
}

/** A call as the step will treat it: run it, or answer it with `refusal` without running it. */
interface PlannedCall {
  call: ToolCall;
  refusal?: string;
  ask?: boolean;
}

/**
 * Finishes a step that waited for approvals: its message, then every call's result: the
 * ones answered before the wait as they were, the approved and unasked ones run now, the
 * denied ones with the reason. Returns how many calls it ran.
 */
async function* finishStep(
  opts: LoopOptions,
  { step, verdicts }: ResumedStep,
  append: (m: ChatMessage) => void,
): AsyncGenerator<AgentEvent, number> {
  const settled = new Map(step.settled.map((m) => [m.toolCallId, m]));
  const calls = step.assistant.toolCalls ?? [];
  const planned = calls.flatMap((call): PlannedCall[] => {
    if (settled.has(call.id)) return [];
    if (!step.asks.includes(call.id)) return [{ call }];
    const verdict = verdicts[call.id] ?? {
      run: false,
      reason: "No decision was recorded for this call, so it was not run.",
    };
    return [verdict.run ? { call } : { call, refusal: verdict.reason }];
  });
  await opts.onCalls?.(startingStep(step.assistant, planned, step.settled));
  append(step.assistant);
  const results = yield* runCalls(opts, planned);
  const byId = new Map([...settled, ...results.map((r) => [r.toolCallId, r] as const)]);
  for (const call of calls) {
    append(byId.get(call.id) ?? errorResult(call, "This call was not run."));
  }
  return planned.filter((p) => p.refusal === undefined).length;
}

type CallEvent = { kind: "event"; event: AgentEvent } | { kind: "done"; index: number; message: ToolMessage };

/** Runs one step's calls in parallel, forwarding their events as they happen. */
async function* runCalls(opts: LoopOptions, calls: PlannedCall[]): AsyncGenerator<AgentEvent, ToolMessage[]> {
  const queue = new AsyncQueue<CallEvent>();
  calls.forEach(({ call, refusal }, index) => {
    runOne(opts, call, refusal, (event) => queue.push({ kind: "event", event })).then(
      (message) => queue.push({ kind: "done", index, message }),
      (err: unknown) => queue.push({ kind: "done", index, message: errorResult(call, describe(err)) }),
    );
  });
  const results: ToolMessage[] = new Array(calls.length);
  for (let remaining = calls.length; remaining > 0; ) {
    const item = await queue.next();
    if (item.kind === "event") yield item.event;
    else {
      results[item.index] = item.message;
      remaining--;
    }
  }
  return results;
}

async function runOne(
  opts: LoopOptions,
  call: ToolCall,
  refusal: string | undefined,
  emit: (e: AgentEvent) => void,
): Promise<ToolMessage> {
  if (refusal !== undefined) return errorResult(call, refusal);
  const started = Date.now();
  const ref = splitName(opts.hub, call.name);
  emit({ type: "status", text: `Calling ${call.name}…` });
  emit({ type: "tool", phase: "start", server: ref.server, tool: ref.tool });
  let outcome: ToolOutcome;
  try {
    outcome = await opts.hub.call(call.name, call.arguments, {
      signal: opts.signal,
      ...(opts.elicit ? { elicit: opts.elicit, conversation: opts.conversation ?? "" } : {}),
      ...(opts.owner ? { owner: opts.owner } : {}),
      onProgress: (p) => {
        const pct = p.total ? ` ${Math.round((100 * p.progress) / p.total)}%` : "";
        emit({ type: "status", text: `Running ${call.name}…${pct}${p.message ? ` ${p.message}` : ""}` });
      },
    });
  } catch (err) {
    // The hub promises not to throw; if it does anyway, the model still gets a result.
    outcome = { ok: false, text: describe(err), artifacts: [], ms: Date.now() - started, ...ref };
  }
  emit({ type: "tool", phase: "end", server: ref.server, tool: ref.tool, ok: outcome.ok, ms: outcome.ms });
  for (const artifact of outcome.artifacts) emit({ type: "artifact", artifact });
  return {
    role: "tool",
    toolCallId: call.id,
    name: call.name,
    content: outcome.text,
    isError: !outcome.ok || undefined,
  };
}

/** The server and MCP name of a model-facing tool name (from the catalog, else from `server__tool`). */
export function splitName(hub: ToolHub, name: string): { server: string; tool: string } {
  const entry = hub.tools().find((t) => t.name === name);
  if (entry) return { server: entry.server, tool: entry.tool };
  const at = name.indexOf("__");
  return at > 0 ? { server: name.slice(0, at), tool: name.slice(at + 2) } : { server: "unknown", tool: name };
}

function describe(err: unknown): string {
  if (err instanceof SwitchboardError) return err.message;
  return err instanceof Error ? `The tool failed: ${err.message}` : "The tool failed.";
}
