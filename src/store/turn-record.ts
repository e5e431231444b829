import type { StoredFile, UnreadableFile } from "../core/inbound.js";
import type { PendingStep } from "../core/messages.js";
import type { ReplyAddress } from "../core/replies.js";
import type { ThreadKey } from "../core/thread.js";

/*
 * What the ledger keeps of a turn (see `TurnLedger`), and what a thread's next turn takes
 * over from the record it replaces.
 */

/** A turn that is writing its reply: what a restart or another replica needs to finish it. */
export interface TurnRecord {
  key: ThreadKey;
  startedAt: string;
  /** Where the reply's messages are, once the first one is on the platform. */
  address?: ReplyAddress;
  /** Set while the turn waits for approvals: no process runs it until they are decided. */
  waiting?: WaitingTurn;
  /** Names the turn: its question in the session carries it (`UserMessage.turn`). */
  id?: string;
  /** The process running the turn (its lock owner); another takes it over once it stops beating. */
  owner?: string;
  /** What was asked, so that a process taking the turn over can ask the model again. */
  input?: TurnInput;
  /** The answer's text as of the last checkpoint: a taken-over reply is laid out again from it. */
  shown?: string;
  /** A step whose calls had started and whose results were not saved: they may have run. */
  calling?: PendingStep;
  /** How many times its process died under it; it ends with the restart note past a limit. */
  takeovers?: number;
  /**
   * How many times its own process went on with it after dropping it (the store fell
   * silent, or the event loop stalled past the heartbeat). Not deaths, but limited too: a
   * turn whose work stalls its process each time would otherwise be resumed for ever.
   */
  resumes?: number;
  /** How many times ending it with the restart note failed; it is given up past a limit. */
  recoverFailures?: number;
  /** Its process handed it over as it stopped (SIGTERM): its next takeover is no death. */
  handedOver?: boolean;
  /** How many replies the turn started before the current one (it goes on in a new one after approvals). */
  replies?: number;
  /** Messages of the thread that waited behind the turn when its process handed it over. */
  queued?: TurnInput[];
  /**
   * Where else its messages were in the store as the record was written (kept while
   * waiting, or handed over): those copies are taken away only once the record is there,
   * so that a crash in between leaves a message in two places, never in none. Whoever
   * takes the turn over takes them away first.
   */
  took?: TookCopies;
  /**
   * A newer message of the thread took the thread's record before this turn could be
   * finished (see `cutOff`): the conversation went on without it, so it is never gone on
   * with (its answer would follow the newer one), only ended with the restart note.
   */
  superseded?: boolean;
  /**
   * Turns of the thread cut off before this one whose replies still owe the restart note:
   * ending them failed as this turn began (the platform refused the note just then, the
   * store failed a write), and a thread has one record. Carried here, never overwritten;
   * as this turn ends the first of them is the thread's record again, for the takeover
   * watch to end (`TurnLedger.end`).
   */
  cutOff?: TurnRecord[];
}

/** See `TurnRecord.took`: the handed messages' members, the kept message as `WaitingMessages` knows it. */
export interface TookCopies {
  handed?: string[];
  waiting?: { id: string; owner: string };
}

export interface TurnInput {
  text: string;
  user: { id: string; name?: string };
  channel: string;
  /** The asker's Slack team: an approval for the thread given in this turn covers its people. */
  team?: string;
  /** When it was sent (see `Inbound.sentAt`): messages handed over are answered in this order. */
  sentAt?: number;
  /** See `Inbound.mark`: taken away by whoever answers the message after its process stopped. */
  mark?: string;
  /**
   * The files on the message, fetched by whoever answers it (a message handed over, a turn
   * taken over before they were read), and why the platform would not give any it did not.
   */
  files?: Array<StoredFile | UnreadableFile>;
  /**
   * `text` already says what the files are (the model was asked with them): a takeover
   * fetches only the images again, which the text cannot carry.
   */
  filesNoted?: boolean;
}

/** What a turn's record starts with. */
export interface TurnRun {
  id: string;
  owner: string;
  input: TurnInput;
  queued?: TurnInput[];
  took?: TookCopies;
  cutOff?: TurnRecord[];
}

export interface WaitingTurn {
  step: PendingStep;
  /** The approval ref of each call that waits, by call id. */
  refs: Record<string, string>;
  /** The earliest expiry among them: the turn goes on then at the latest. */
  expiresAt: string;
  user: { id: string; name?: string };
  channel: string;
  /** See `TurnInput.team`; absent in records parked before it was kept (their approvals are unscoped). */
  team?: string;
}

/**
 * The replies cut off before a thread's new turn that still owe the restart note, oldest
 * first, for its record to carry (`TurnRecord.cutOff`): those `previous` carried, and
 * `previous` itself when the new message could not end it first (`unsettled`). Not one
 * parked on approvals: the new turn supersedes its questions.
 */
export function cutOffBehind(previous: TurnRecord | undefined, unsettled: boolean): TurnRecord[] | undefined {
  if (!previous) return undefined;
  // Left out, what only a turn that goes on needs; the messages behind it were handed back.
  const { cutOff = [], shown, calling, queued, waiting, ...owed } = previous;
  const carried = unsettled && !waiting ? [...cutOff, { ...owed, superseded: true }] : cutOff;
  return carried.length > 0 ? carried : undefined;
}
