import { randomUUID } from "node:crypto";
import type { Agent, TurnInput } from "../agent/agent.js";
import { splitName } from "../agent/loop.js";
import { abandonedStep } from "../agent/steps.js";
import type { Config } from "../config.js";
import { toUserFacing } from "../core/errors.js";
import type { AgentEvent } from "../core/events.js";
import type { InboundFile } from "../core/inbound.js";
import type { PendingStep } from "../core/messages.js";
import { platformOf, type ThreadKey } from "../core/thread.js";
import { log } from "../log.js";
import type { ToolHub } from "../mcp/types.js";
import type { Claims } from "../store/claims.js";
import { storeFailed } from "../store/index.js";
import { ClaimLost, type Held, LockLost } from "../store/locks.js";
import type { Session, SessionRepository } from "../store/sessions.js";
import type { TookCopies, TurnLedger, TurnRecord } from "../store/turns.js";
import type { ApprovalDesk } from "./approvals/desk.js";
import { approvalMode, approvedForThread, askerTeam, type CallPlace, callGate } from "./approvals/policy.js";
import { SUPERSEDED_REASON } from "./approvals/questions.js";
import { type Budgets, budgetGate } from "./budgets.js";
import type { Inbound, Reply } from "./contract.js";
import type { FormDesk } from "./forms/desk.js";
import { prepareAttachments } from "./inbound-files.js";
import { leftToTaker } from "./message-custody.js";
import { type RenderOutcome, ReplyRenderer } from "./render.js";
import { type Known, replacing } from "./replaced-record.js";
import { seedFromThread } from "./thread-seed.js";
import { payerOf } from "./turn-accounts.js";
import { inputOf } from "./turn-input.js";
import { answerUnrecorded } from "./unrecorded.js";
import { postKeys } from "./write-keys.js";

export interface TurnDeps {
  agent: Agent;
  sessions: SessionRepository;
  ledger: TurnLedger;
  config: Config;
  hub: ToolHub;
  desk: ApprovalDesk;
  /** Asks people what tools' servers request while they run (MCP elicitation). */
  formDesk?: FormDesk;
  /** This process, as the thread locks and turn records name it. */
  owner: string;
  /** The daily caps, checked again before each model call after a tool step. */
  budgets?: Budgets;
}

/** A turn taken over this many times (its processes kept dying) ends with the restart note instead. */
export const MAX_TAKEOVERS = 2;
/** A turn its own process went on with this many times (see `TurnRecord.resumes`) ends with the note too. */
export const MAX_RESUMES = 5;

export { MAY_HAVE_RUN } from "./takeover-steps.js";

export interface TurnHooks {
  firstVisible?(ms: number): void;
  /** The sentence to end the reply with when the turn was stopped by a shutdown. */
  interruptedNote(): string | undefined;
  /** True when the turn was stopped so that another process goes on with it (a rolling restart). */
  handingOver?(): boolean;
  /**
   * The thread's lock as this turn holds it: the turn's record and session are written
   * under its lease, and once it is lost the turn stops without writing anything more.
   */
  held?: Held;
  /** The message's claims, taken in the record's own write (see `Dedupe.holding`), or the turn ends with `ClaimLost`. */
  claims?: Claims;
  /** The turn's record is in the store: the other copies of its message (`TurnRecord.took`) can go. */
  recorded?(): void;
}

export interface TurnResult {
  outcome: RenderOutcome;
  events: AgentEvent[];
  /** The session as the turn left it (saved), for the after-turn jobs. */
  session?: Session;
  /** The turn stopped to wait for approvals; its record stays in the ledger. */
  parked?: boolean;
}

/** Who the turn answers and where: what a resumed turn reads back from its record. */
export interface TurnPlace extends CallPlace {
  key: ThreadKey;
  user: { id: string; name?: string };
  /** The asker's Slack team (see `askerTeam`). */
  team?: string;
}

/**
 * One turn, run under its thread's lock: the only writer of the thread's session while it
 * runs. The session is saved after each tool step and once at the end; where the reply's
 * messages are goes to the turn's own ledger record as each one is started, so a restart
 * or another process can find and end it. A turn whose tools need approval parks: its
 * record keeps the waiting step, and `resumeTurn` goes on from it when people decide.
 */
export async function runTurn(
  inbound: Inbound,
  deps: TurnDeps,
  signal: AbortSignal,
  hooks: TurnHooks,
  /** What the caller knows of the thread's record, read under the lock. */
  known?: Known,
  /** The id of the turn's record (see `TurnRecord.id`), and the other copies of its message. */
  named: { id?: string; took?: TookCopies | undefined } = {},
): Promise<TurnResult> {
  const { ledger, config, agent } = deps;
  const team = askerTeam(inbound.platform, inbound.from);
  const place: TurnPlace = {
    key: inbound.key,
    user: inbound.user,
    platform: inbound.platform,
    channel: inbound.channel,
    ...(team ? { team } : {}),
  };
  // Read while the turn's record is written (under the lock the session is this turn's
  // alone): one round trip less before the model is asked. Its failure is drive's to report.
  const loading = deps.sessions.getOrCreate(inbound.key);
  loading.catch(() => undefined);
  const { previous, cutOff } = await replacing(ledger, inbound.key, known);
  const { id = randomUUID(), took } = named;
  const carried = { ...(took ? { took } : {}), ...(cutOff ? { cutOff } : {}) };
  const run = { id, owner: deps.owner, input: inputOf(inbound), ...carried };
  // Written while the model is asked: `drive` shows nothing before it is stored.
  const record = ledger.open(inbound.key, run, hooks.held?.lease, hooks.claims);
  const recorded = ledger.opened(record);
  if (hooks.recorded) recorded.then(hooks.recorded, () => undefined);
  const from = { session: loading, recorded };
  return drive(record, place, inbound.reply, deps, signal, hooks, from, async (session, common) => {
    if (previous?.waiting) {
      // Written again before anyone decided: the old questions end, and the model learns the step never ran.
      await deps.desk.supersede(inbound.key, previous.waiting, inbound.reply);
      session.messages.push(...abandonedStep(previous.waiting.step, SUPERSEDED_REASON));
    }
    if (session.turns === 0 && session.messages.length === 0 && inbound.history) {
      await seedFromThread(session, inbound.history, config, agent.modelFor(session));
    }
    return askWithFiles(record, inbound.text, inbound.attachments, deps, session, common, signal);
  });
}

/**
 * Asks the model `text` with what its `files` say. The record keeps the question as
 * asked, so that a takeover asks with what the files said too, fetching only the images again.
 */
export async function askWithFiles(
  record: TurnRecord,
  text: string,
  files: InboundFile[],
  deps: TurnDeps,
  session: Session,
  common: Common,
  signal: AbortSignal,
): Promise<AsyncGenerator<AgentEvent, unknown>> {
  const noted = record.input?.filesNoted === true;
  const input = await prepareAttachments(text, files, {
    config: deps.config,
    model: deps.agent.modelFor(session),
    signal,
    ...(noted ? { imagesOnly: true } : {}),
  });
  if (!noted && input.text !== text) await deps.ledger.asked(record, input.text);
  return deps.agent.runTurn({ ...common, text: input.text, parts: input.parts });
}

export type Common = Omit<TurnInput, "text" | "parts">;

/** Where a turn run from its record answers: the thread, and who asked where. */
export function storedPlace(
  key: ThreadKey,
  asked: { user: TurnPlace["user"]; channel: string; team?: string },
): TurnPlace {
  const place = { key, user: asked.user, platform: platformOf(key) ?? "console", channel: asked.channel };
  return asked.team ? { ...place, team: asked.team } : place;
}

/**
 * Where a turn goes on from: the text its reply keeps (a takeover), its session if already
 * being read, its record if still being written (awaited before the reply shows anything).
 */
interface DriveFrom {
  kept?: string;
  session?: Promise<Session>;
  recorded?: Promise<void>;
}

/** The part of a turn that new and resumed turns share: session, events into the reply, save, park or end. */
export async function drive(
  record: TurnRecord,
  place: TurnPlace,
  reply: Reply,
  deps: TurnDeps,
  signal: AbortSignal,
  hooks: TurnHooks,
  from: DriveFrom,
  start: (session: Session, common: Common) => Promise<AsyncGenerator<AgentEvent, unknown>>,
): Promise<TurnResult> {
  const kept = from.kept ?? "";
  /** The record `open` began is known to be in the store: nothing is shown before. */
  let stored = from.recorded === undefined;
  const { sessions, ledger } = deps;
  const started = Date.now();
  const events: AgentEvent[] = [];
  /** The answer's text so far, as the reply shows it (a taken-over turn starts from what it keeps). */
  let shown = kept;
  ledger.guard(record, hooks.held?.lease);
  /**
   * The lock was lost ("lock": another process has the thread) or the message ("claim":
   * another process answers it, see `ClaimLost`): this turn writes nothing more.
   */
  let gone: false | "lock" | "claim" = false;
  const isGone = () => gone !== false || hooks.held?.lost.aborted === true;
  const fenced = async (write: () => Promise<void>) => {
    try {
      await write();
    } catch (err) {
      if (err instanceof LockLost) {
        gone = "lock";
        void renderer.abandon();
      }
      throw err;
    }
  };
  reply.onAddress?.((address) => fenced(() => ledger.address(record, address)));
  if (record.id) reply.keyPosts?.(postKeys(record.id, record.replies));
  const renderer = new ReplyRenderer(
    reply,
    () => hooks.firstVisible?.(Date.now() - started),
    hooks.interruptedNote,
  );
  // Lost at any moment, even while its last words wait for the rate budget: nothing more is
  // written over what the process that has the thread now writes.
  const lost = hooks.held?.lost;
  if (lost?.aborted) void renderer.abandon();
  else lost?.addEventListener("abort", () => void renderer.abandon(), { once: true });
  let outcome: RenderOutcome = "ok";
  let session: Session | undefined;
  let pending: PendingStep | undefined;
  let handedOver = false;
  try {
    session = await (from.session ?? sessions.getOrCreate(place.key)).catch((err: unknown) => {
      throw storeFailed(err);
    });
    const current = session;
    const run = await start(current, {
      session: current,
      ...(record.id ? { turn: record.id } : {}),
      checkpoint: () =>
        fenced(async () => {
          // Aborted to be handed over: the step's calls were cut short, answered "cancelled"
          // whatever their servers did. Unsaved, with `calling` kept, the step tells the
          // process taking over that they may have run, so a write is not repeated blindly.
          if (hooks.handingOver?.()) throw signal.reason;
          // Fenced in the write itself, not checked before it: a process that stalls in
          // between past its heartbeat would save over the turn of the one that took the thread.
          await sessions.save(current, hooks.held?.lease);
          await ledger.checkpoint(record, shown);
        }),
      onCalls: (step) => fenced(() => ledger.calling(record, step)),
      ...budgetGate(deps.budgets, payerOf(place)),
      user: place.user,
      platform: place.platform,
      channel: place.channel,
      signal,
      gate: callGate(
        deps,
        place,
        (tool) => approvedForThread(current.settings, tool, place.team),
        Boolean(reply.ask),
      ),
      ...(deps.formDesk
        ? {
            elicit: deps.formDesk.asker({
              reply,
              key: place.key,
              user: place.user,
              platform: place.platform,
              channel: place.channel,
              ...(record.address?.channel ? { where: record.address.channel } : {}),
            }),
          }
        : {}),
      offers: (tool) => approvalMode(deps.config, tool, place) !== "never",
    });
    for await (let event of run) {
      if (event.type === "text") {
        // A taken-over answer goes on after the text it keeps, as the loop separates its steps.
        if (shown === kept && kept !== "" && !kept.endsWith("\n"))
          event = { ...event, delta: `\n\n${event.delta}` };
        shown += event.delta;
      }
      // Another process goes on from the last checkpoint: nothing more is written or saved here.
      if (event.type === "error" && (isGone() || hooks.handingOver?.())) {
        handedOver = !isGone();
        break;
      }
      events.push(event);
      if (event.type === "waiting") pending = event.step;
      if (!stored) {
        // Refused by the lease's fence: the thread is another process's now (see `finally`).
        await from.recorded?.catch((err: unknown) => {
          throw err instanceof LockLost ? err : storeFailed(err);
        });
        stored = true;
      }
      outcome = (await renderer.render(event)) ?? outcome;
    }
  } catch (err) {
    outcome = "error";
    pending = undefined;
    if (err instanceof LockLost) gone = err instanceof ClaimLost ? "claim" : "lock";
    handedOver = !isGone() && (hooks.handingOver?.() ?? false);
    if (!handedOver && !isGone()) {
      log.error({ err, key: place.key }, "reply failed");
      await renderer.fail(hooks.interruptedNote() ?? toUserFacing(err).message);
      // Nothing reaches the thread: the asker learns why where the platform still lets the bot write.
      const broken = renderer.broken();
      if (broken !== undefined)
        await reply
          .unwritable?.(broken)
          .catch((e: unknown) => log.warn({ err: e, key: place.key }, "could not tell the asker"));
    }
  } finally {
    // Its record was never written: the claims were refused in the same write.
    if (gone === "claim") await renderer.abandon().then(() => leftToTaker(place.key));
    else if (isGone()) {
      await renderer.abandon();
      log.warn(
        { key: place.key },
        "lost the thread's lock mid-turn; the process that takes the thread next goes on",
      );
      // Its message is owed still, and maybe only this process knows of it.
      if (!stored) await answerUnrecorded(record, ledger, sessions);
    } else if (handedOver) {
      // Still under the thread's lock: the process taking it over counts no death.
      await ledger
        .handOver(record)
        .catch((err: unknown) => log.warn({ err, key: place.key }, "hand-over not recorded"));
      await renderer.handOver();
      log.info({ key: place.key }, "turn handed over to another process");
    } else await settle();
  }
  if (handedOver || isGone()) {
    reply.leftToOthers?.();
    return { outcome: "interrupted", events };
  }
  return { outcome, events, session, parked: Boolean(pending) };

  async function settle(): Promise<void> {
    // The end checkpoint, then the ledger: a crash between the two leaves a saved answer,
    // which a takeover only shows again (see takeOverTurn).
    if (session) {
      const lost = await sessions.save(session, hooks.held?.lease).then(
        () => false,
        (err: unknown) => {
          if (err instanceof LockLost) return true;
          outcome = "error";
          pending = undefined;
          log.error({ err, key: place.key }, "could not save the session");
          return false;
        },
      );
      if (lost) {
        log.warn({ key: place.key }, "lost the thread's lock as the turn ended; its end is not saved");
        gone = "lock";
        return;
      }
    }
    if (pending) {
      await deps.desk
        .park(record, pending, {
          reply,
          user: place.user,
          place,
          ...(place.team ? { team: place.team } : {}),
          toolOf: (name) => splitName(deps.hub, name),
        })
        .catch(async (err: unknown) => {
          log.error({ err, key: place.key }, "could not park the turn for its approvals");
          pending = undefined;
          outcome = "error";
          if (err instanceof LockLost) return;
          await reply.notice(toUserFacing(storeFailed(err)).message).catch(() => undefined);
        });
    }
    if (!pending) {
      await ledger
        .end(record)
        .catch((err: unknown) => log.warn({ err, key: place.key }, "could not end the turn's record"));
    }
  }
}
