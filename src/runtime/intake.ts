import { toUserFacing } from "../core/errors.js";
import type { ThreadKey } from "../core/thread.js";
import { log } from "../log.js";
import { REFUSED_NOTE } from "./access.js";
import type { Inbound } from "./contract.js";
import type { DispatcherDeps } from "./dispatcher-deps.js";
import type { PromptOutcome } from "./prompts.js";

/**
 * Said, in place, to a mention that asks nothing (no text, no files, nothing before it in
 * its thread to answer): the adapters tell it before a thread is opened or a turn queued.
 */
export const NOTHING_ASKED =
  "You mentioned me without asking anything. Write your question after the mention, in the same message.";

/** A message that is a `/prompt` command. */
const PROMPT_MESSAGE = /^\/prompt\s+/;

export interface IntakeChecks {
  admit(inbound: Inbound): "yes" | "tell" | "silent";
  prompt(text: string): Promise<PromptOutcome>;
  firstSight(id: string): Promise<boolean>;
  /** A redelivery's sighting (see `Dedupe.redelivered`). */
  redelivered?(id: string, waits: boolean): Promise<boolean>;
  /** Gives back an id of a copy dropped after all (see `Dedupe.release`). */
  release?(id: string): Promise<void>;
}

/**
 * What a message must pass before it is queued: the access lists, the duplicate check over
 * every id it has, and a `/prompt` written as a message (expanded). Undefined when it is
 * refused, answered here already (a prompt's sentence) or a copy of one already taken.
 */
export async function accept(inbound: Inbound, checks: IntakeChecks): Promise<Inbound | undefined> {
  // Before anything is stored or sent anywhere: a refused message nobody is told of leaves
  // no trace but a log line.
  const admitted = checks.admit(inbound);
  if (admitted === "silent") return undefined;
  // Claimed before anything is said or a prompt's server asked: a message's copies (Slack's
  // app_mention and message events, two gateway sessions) may reach two replicas, and each
  // would say its sentence.
  try {
    if (!(await sighted(inbound, checks))) {
      log.debug({ id: inbound.id, key: inbound.key }, "duplicate event dropped");
      return undefined;
    }
  } catch (err) {
    log.error({ err, key: inbound.key }, "could not check the event for duplicates");
    await inbound.reply.notice(toUserFacing(err).message).catch(() => undefined);
    return undefined;
  }
  if (admitted === "tell") {
    await inbound.reply.notice(REFUSED_NOTE).catch(() => undefined);
    return undefined;
  }
  // `/prompt …` written as a message (Slack threads and the assistant pane take no slash commands).
  if (PROMPT_MESSAGE.test(inbound.text)) {
    const outcome = await checks.prompt(inbound.text.replace(PROMPT_MESSAGE, ""));
    // A message cannot open a form: `prompt` answers it with a sentence instead.
    if (!("ask" in outcome)) {
      if ("say" in outcome) await inbound.reply.notice(outcome.say).catch(() => undefined);
      return undefined;
    }
    inbound = { ...inbound, text: outcome.ask };
  }
  inbound.onAccepted?.();
  return inbound;
}

/**
 * Every id of the message is marked, so whichever copy arrives first wins. A redelivery
 * whose own id was seen may still be this process's: the process that took it may have
 * died before it stored the message (it is waited for while it beats). Its other ids, if
 * seen, are then taken only from a process that stopped: a live one took the message as
 * another event, and answers it.
 */
async function sighted(inbound: Inbound, checks: IntakeChecks): Promise<boolean> {
  const ids = [inbound.id, ...(inbound.aliases ?? [])];
  const sightings = await Promise.all(ids.map((id) => checks.firstSight(id)));
  if (sightings.every(Boolean)) return true;
  if (await redeliveryTaken(inbound, ids, sightings, checks)) return true;
  // Two copies racing on two replicas may each win a part of the ids (a redelivery its
  // event id, the first copy `channel:ts`): what this one won goes back, so that the other,
  // waiting for this claim, takes it rather than both dropping the message.
  await Promise.all(ids.filter((_, i) => sightings[i]).map((id) => checks.release?.(id)));
  return false;
}

/** The ids this copy did not win, taken from a process that stopped (see `Dedupe.redelivered`). */
async function redeliveryTaken(
  inbound: Inbound,
  ids: string[],
  sightings: boolean[],
  checks: IntakeChecks,
): Promise<boolean> {
  const { redelivered } = checks;
  // Its own id this process's: a copy of the message as another event won the rest.
  if (!inbound.redelivered || !redelivered || sightings[0]) return false;
  for (const [i, id] of ids.entries()) {
    if (sightings[i]) continue;
    if (!(await redelivered(id, i === 0))) return false;
    sightings[i] = true;
  }
  return true;
}

/**
 * A thread with a session, a first turn running (its record exists from its start), or
 * whose opening message was taken (a follow-up may reach a replica before that turn begins).
 */
export async function threadKnown(
  deps: Pick<DispatcherDeps, "sessions" | "ledger" | "dedupe">,
  key: ThreadKey,
  opening?: string,
): Promise<boolean> {
  const [session, turn, opened] = await Promise.all([
    deps.sessions.exists(key),
    deps.ledger.get(key),
    opening ? deps.dedupe.seen(opening) : false,
  ]);
  return session || turn !== undefined || opened;
}
