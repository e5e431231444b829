import type { InboundFile } from "../core/inbound.js";
import { storeFailed } from "../store/index.js";
import type { TurnRecord } from "../store/turns.js";
import type { Outcome } from "./approvals/desk.js";
import { grantForThread } from "./approvals/policy.js";
import type { Reply } from "./contract.js";
import { afterCrash, answered, stepSaved } from "./takeover-steps.js";
import { askWithFiles, drive, storedPlace, type TurnDeps, type TurnHooks, type TurnResult } from "./turn.js";

/*
 * Turns run from their record rather than from a message: one parked on approvals going
 * on once they are decided, and one whose process stopped, taken over by another.
 */

/**
 * Goes on with a parked turn whose approvals are all decided, in a new reply below the
 * questions. Its record is unparked before any call runs: a crash from there on ends the
 * reply with the restart note and never runs an approved call twice.
 */
export async function resumeTurn(
  record: TurnRecord,
  outcome: Outcome,
  reply: Reply,
  deps: TurnDeps,
  signal: AbortSignal,
  hooks: TurnHooks,
): Promise<TurnResult> {
  const waiting = record.waiting;
  if (!waiting) throw new Error(`The turn of ${record.key} is not waiting`);
  const place = storedPlace(record.key, waiting);
  // Fenced from its first write: one that lands after the lock was lost must not unpark
  // (or overwrite) the record of the process that has the thread by then.
  deps.ledger.guard(record, hooks.held?.lease);
  await deps.ledger.unpark(record, deps.owner).catch((err: unknown) => {
    throw storeFailed(err);
  });
  return drive(record, place, reply, deps, signal, hooks, {}, async (session, common) => {
    grantForThread(session.settings, outcome.approvedForThread, place.team);
    return deps.agent.resumeTurn({
      ...common,
      resumed: { step: waiting.step, verdicts: outcome.verdicts },
    });
  });
}

/**
 * Goes on with a turn whose process died (kill -9, a lost machine, a replica handing its
 * turns over), from its last checkpoint, in its own reply: the messages are laid out
 * again from the text of the finished steps, and the cut-off step runs again. Calls that
 * had started and whose results were not saved are not repeated blindly: the model is
 * told they may have run, unless the tool says it is read-only or idempotent.
 */
export async function takeOverTurn(
  record: TurnRecord,
  reply: Reply,
  deps: TurnDeps,
  signal: AbortSignal,
  hooks: TurnHooks,
  attachments: InboundFile[] = [],
): Promise<TurnResult> {
  const { input, id } = record;
  if (!input || !id) throw new Error(`The turn of ${record.key} cannot be taken over`);
  const place = storedPlace(record.key, input);
  const kept = record.shown ?? "";
  return drive(record, place, reply, deps, signal, hooks, { kept }, async (session, common) => {
    const asked = session.messages.some((m) => m.role === "user" && m.turn === id);
    const calling = record.calling;
    const cutOff =
      calling && !stepSaved(session, calling)
        ? { resumed: { step: calling, verdicts: afterCrash(calling, deps.hub) } }
        : {};
    // Not saved before its first step's results: asked again, that step's calls said as
    // they may have run (a handed message's files are read by the process that answers it).
    if (!asked)
      return askWithFiles(record, input.text, attachments, deps, session, { ...common, ...cutOff }, signal);
    const last = session.messages.at(-1);
    // The answer was saved, but not the turn's end: only its text is left to show.
    if (last?.role === "assistant" && !last.toolCalls?.length) return answered(last.content);
    return deps.agent.resumeTurn({ ...common, ...cutOff });
  });
}
