import type { Agent } from "../agent/agent.js";
import { countTokens, modelLimits } from "../agent/context.js";
import type { Config } from "../config.js";
import { toUserFacing } from "../core/errors.js";
import type { AgentEvent } from "../core/events.js";
import type { PriorMessage } from "../core/inbound.js";
import { log } from "../log.js";
import { storeFailed } from "../store/index.js";
import type { Session, SessionRepository } from "../store/sessions.js";
import type { TurnLedger } from "../store/turns.js";
import type { Inbound } from "./contract.js";
import { prepareAttachments } from "./inbound-files.js";
import { type RenderOutcome, ReplyRenderer } from "./render.js";

export interface TurnDeps {
  agent: Agent;
  sessions: SessionRepository;
  ledger: TurnLedger;
  config: Config;
}

export interface TurnHooks {
  firstVisible?(ms: number): void;
  /** The sentence to end the reply with when the turn was stopped by a shutdown. */
  interruptedNote(): string | undefined;
}

export interface TurnResult {
  outcome: RenderOutcome;
  events: AgentEvent[];
  /** The session as the turn left it (saved), for the after-turn jobs. */
  session?: Session;
}

/**
 * One turn, run under its thread's lock: the only writer of the thread's session while it
 * runs. The session is saved after each tool step and once at the end; where the reply's
 * messages are goes to the turn's own ledger record as each one is started, so a restart
 * or another process can find and end it.
 */
export async function runTurn(
  inbound: Inbound,
  deps: TurnDeps,
  signal: AbortSignal,
  hooks: TurnHooks,
): Promise<TurnResult> {
  const { agent, sessions, ledger, config } = deps;
  const started = Date.now();
  const events: AgentEvent[] = [];
  const record = await ledger.begin(inbound.key).catch((err: unknown) => {
    throw storeFailed(err);
  });
  inbound.reply.onAddress?.((address) => ledger.address(record, address));
  const renderer = new ReplyRenderer(
    inbound.reply,
    () => hooks.firstVisible?.(Date.now() - started),
    hooks.interruptedNote,
  );
  let outcome: RenderOutcome = "ok";
  let session: Session | undefined;
  try {
    session = await sessions.getOrCreate(inbound.key).catch((err: unknown) => {
      throw storeFailed(err);
    });
    const current = session;
    if (current.turns === 0 && current.messages.length === 0 && inbound.history) {
      await seedFromThread(current, inbound.history, config, agent.modelFor(current));
    }
    const input = await prepareAttachments(inbound.text, inbound.attachments, {
      config,
      model: agent.modelFor(current),
      signal,
    });
    const run = agent.runTurn({
      session: current,
      user: inbound.user,
      text: input.text,
      parts: input.parts,
      platform: inbound.platform,
      channel: inbound.channel,
      signal,
      checkpoint: () => sessions.save(current),
    });
    for await (const event of run) {
      events.push(event);
      outcome = (await renderer.render(event)) ?? outcome;
    }
  } catch (err) {
    outcome = "error";
    log.error({ err, key: inbound.key }, "reply failed");
    await renderer.fail(hooks.interruptedNote() ?? toUserFacing(err).message);
  } finally {
    // The end checkpoint, then the ledger: a crash between the two re-ends a reply that is
    // already complete, which only appends the restart note to it.
    if (session) {
      await sessions.save(session).catch((err: unknown) => {
        outcome = "error";
        log.error({ err, key: inbound.key }, "could not save the session");
      });
    }
    await ledger
      .end(inbound.key)
      .catch((err: unknown) => log.warn({ err, key: inbound.key }, "could not end the turn's record"));
  }
  return { outcome, events, session };
}

/** A mention mid-thread: start the session with what was said before, newest first until a quarter of the window. */
async function seedFromThread(
  session: Session,
  history: () => Promise<PriorMessage[]>,
  config: Config,
  model: string,
): Promise<void> {
  let prior: PriorMessage[];
  try {
    prior = await history();
  } catch (err) {
    log.warn({ err, key: session.key }, "could not read the thread's earlier messages");
    return;
  }
  const budget = Math.floor(modelLimits(config, model).contextWindow / 4);
  const lines: string[] = [];
  let used = 0;
  for (const m of [...prior].reverse()) {
    const line = `${m.fromBot ? "You (the assistant)" : m.author}: ${m.text}`;
    used += countTokens(line);
    if (used > budget) break;
    lines.unshift(line);
  }
  if (lines.length === 0) return;
  session.messages.push({
    role: "user",
    content: `Earlier messages in this thread, before I asked you:\n\n${lines.join("\n\n")}`,
  });
}
