import type { Config, Secrets } from "../config.js";
import type { Artifact } from "../core/artifacts.js";
import type { FormValues, FormView } from "../core/forms.js";
import type { InboundFile, PriorMessage, Provenance, StoredFile } from "../core/inbound.js";
import type { ReplyAddress, ResumeFrom } from "../core/replies.js";
import type { Platform, ThreadKey } from "../core/thread.js";
import type { StateStore } from "../store/state.js";
import type { Command } from "./commands.js";
import type { PromptOptions, PromptOutcome } from "./prompts.js";

export type { ReplyAddress, ResumeFrom };

export interface Inbound {
  /** Platform event id, for dedupe. */
  id: string;
  /** Further ids of the same message (e.g. Slack `channel:ts`) that must also dedupe. */
  aliases?: string[];
  /**
   * Called once the message is known to be the first copy seen (by any replica) and will be
   * answered: where a platform acknowledges it (Slack's :eyes:), so that two copies of one
   * message reaching two replicas are acknowledged once, by the one that answers.
   */
  onAccepted?: () => void;
  /**
   * Another copy of the message may have reached a process that stopped before it stored
   * the message, and then this one answers it (see `Dedupe.redelivered`): a delivery the
   * platform made again, having had no acknowledgement of an earlier one (Slack's
   * retries), or any copy on Discord, whose gateway gives every replica of a session each
   * message once.
   */
  redelivered?: boolean;
  /**
   * Other ids this copy claimed for the message before the runner had it (Discord's
   * opening of a thread under it): marked held with the message's own as it is stored,
   * so that a replica waiting on one of them leaves it then (see `Dedupe.holding`).
   */
  claims?: string[];
  /**
   * Called once the message is where no stop of this process can lose it: kept in the
   * store while it waits, or in its turn's record. Slack's acknowledgement waits for it,
   * so that Slack delivers again a message whose process died before then.
   */
  onStored?: () => void;
  /**
   * Where the platform shows that the bot took the message (Slack: the :eyes: on it, as
   * `channel:ts`). Its own handler takes that away as the turn ends; a process that answers
   * the message after its process stopped does it with `Adapter.unmark`.
   */
  mark?: string;
  key: ThreadKey;
  platform: Platform;
  channel: string;
  user: { id: string; name?: string };
  /**
   * When the person sent it (ms since the epoch, read off the platform's message id):
   * messages of one thread waiting in several replicas are answered in this order.
   */
  sentAt?: number;
  /** Who and where, for the access lists (see access.ts); absent: a channel, no workspace or roles known. */
  from?: Provenance;
  text: string;
  attachments: InboundFile[];
  /** Earlier messages of the thread, when the bot joins an existing thread mid-way. */
  history?: () => Promise<PriorMessage[]>;
  reply: Reply;
}

/** Receives the answer text as it is written; the renderer paces the platform writes. */
export interface TextSink {
  write(delta: string): void;
  /**
   * Delivers the complete final text; resolves when it is on the platform. `answered`: the
   * answer is whole (not paused for an approval, nor handed to another process), so it
   * may carry its rating buttons.
   */
  finish(how?: { answered?: boolean }): Promise<void>;
  /** Ends the reply with a sentence saying what went wrong (never a dangling placeholder). */
  fail(message: string): Promise<void>;
  /**
   * Stops writing at once and leaves the messages as they are: another process has the
   * reply now (this one lost the thread's lock). Resolves when no write is in flight.
   */
  abandon?(): Promise<void>;
  /**
   * The error that stopped its writes for good (the bot may not write there, the platform
   * refuses every try), if one did: the turn stops then, rather than pay for an answer
   * nobody can see.
   */
  broken?(): unknown;
}

/** One per turn, made by the adapter: knows how to write back to that place. */
export interface Reply {
  /**
   * This process will not answer the message: another one goes on with it (its turn was
   * handed over or taken, or the message handed over), and takes away what shows the
   * message taken (`Inbound.mark`) once it has answered.
   */
  leftToOthers?(): void;
  /**
   * Registers the runtime's recorder: called with the reply's address each time a new
   * platform message is started (or a stream opened or closed), and awaited before the
   * reply goes on, so the stored address is never behind the platform.
   */
  onAddress?(record: (address: ReplyAddress) => Promise<void>): void;
  /**
   * Names the reply's messages: `keyOf(n)` is the idempotency key of its n-th message
   * (see write-keys.ts), posted with it where the platform keeps one, so that a retried
   * post or another process taking the turn over finds the message instead of posting
   * it twice. Called before `stream()`.
   */
  keyPosts?(keyOf: (index: number) => string): void;
  /** Shown while the agent works ("Calling everything__echo…"); cleared by the answer. */
  status(text: string): Promise<void>;
  stream(): TextSink;
  /**
   * Resolves once the file is on the platform. Handed over while the answer is written
   * (after `stream()`, before its `finish()`/`fail()`), a file may wait to go with the
   * answer's final write (Discord): so never await it before ending the stream.
   */
  upload(a: Artifact): Promise<void>;
  /**
   * True when files handed over while the answer is written can go with its final write.
   * Otherwise the renderer hands them over once the answer has ended, so they follow it.
   */
  readonly filesWithAnswer?: boolean;
  title(t: string): Promise<void>;
  /**
   * False where the platform shows no title for this thread (a Slack channel thread is
   * named by its first message): none is made for it, which spares a model call per
   * thread. Absent means true.
   */
  readonly takesTitle?: boolean;
  /** Informational answers (commands); ephemeral where the platform allows it. */
  notice(text: string): Promise<void>;
  /**
   * The message will not be answered (a daily budget refused it, its sentence already
   * sent with `notice`): what showed it taken when it was accepted (a thread status, a
   * working session with the platform's stop button) goes, since no `stream()` will end it.
   * Absent where acceptance shows nothing that lasts.
   */
  declined?(): Promise<void>;
  /**
   * The answer could not be written where it belongs (`err`: the platform refuses the bot
   * there, see `TextSink.broken`): tells the asker why another way, where the platform has one.
   */
  unwritable?(err: unknown): Promise<void>;
  /**
   * Posts a question with buttons in the thread, after the answer so far; resolves with its
   * message id. Absent where nobody could click (the terminal).
   */
  ask?(question: Question): Promise<string>;
  /** Replaces a question's message with `text`, buttons removed (also from a rebuilt reply). */
  settle?(messageId: string, text: string): Promise<void>;
  /**
   * Offers the asker a Stop button (its clicks carry `ref`) while the answer is written;
   * the platform decides where and when. Called before the answer starts.
   */
  offerStop?(ref: string): void;
  /**
   * 👍 / 👎 to put under the answer once it has finished (its clicks carry `ref` and "good"
   * or "bad"); an answer that ends in an error gets none. Called before the answer starts.
   */
  offerFeedback?(ref: string): void;
}

/** A message with buttons whose clicks come back as interactions carrying `ref`. */
export interface Question {
  ref: string;
  /** Markdown, as answers are written. */
  text: string;
  /**
   * Buttons. One with `url` is a link that opens the page; where the platform reports the
   * click (Slack), it comes back with its `value` too.
   */
  choices: Array<{ value: string; label: string; style?: "primary" | "danger"; url?: string }>;
}

/**
 * What the platform must do with a click before it answers it: open a form (Slack
 * `views.open` with the click's trigger, a Discord modal as the click's first response),
 * or, for a submitted form, keep it open with these errors by field id (Slack shows them
 * in the modal; elsewhere they are told to the person).
 */
export type InteractionReply = { open: FormView } | { errors: Record<string, string> };

/** The button value that opens a form: Discord must answer such a click with the modal itself. */
export const OPEN_FORM = "form";

export interface Adapter {
  readonly platform: Platform;
  start(): Promise<void>;
  /** Stops taking new events; turns in flight continue. */
  stop(): Promise<void>;
  /**
   * Lets go of what the turns in flight wrote through (Slack's write budgets, shared with
   * the other replicas), once the runtime has drained them after `stop`; optional.
   */
  close?(): Promise<void>;
  /** True while connected to the platform (for /readyz). */
  ready(): boolean;
  /**
   * Ends a reply that a crash left half-written: the message at `address` itself ends with
   * `note` (an open Slack native stream is stopped with it). Without an address (the crash
   * came before the first write) the note is posted in the thread. Called once per such
   * thread at start-up; optional.
   */
  recover?(key: ThreadKey, address: ReplyAddress | undefined, note: string): Promise<void>;
  /** Rebuilds the way back to a stored reply in this process, to write to the same messages. */
  replyFor?(key: ThreadKey, address: ResumeFrom): Reply;
  /** A file of a message another process took, fetchable here (with this process's credentials). */
  fileFrom?(file: StoredFile): InboundFile;
  /** Takes away what showed that a process which stopped took a message (`Inbound.mark`), once it is answered here. */
  unmark?(key: ThreadKey, mark: string): Promise<void>;
}

/**
 * A click or a form submission (Slack `block_actions` / `view_submission`, Discord
 * component and modal interactions), addressed by the stored id its button or form carries.
 */
export interface Interaction {
  /** Platform event id, for dedupe. */
  id: string;
  kind: "button" | "form";
  /** The stored id (`interactions:{id}` in the store); buttons and forms carry nothing else. */
  ref: string;
  /** The button's value (e.g. "approve", "deny") or the form's fields by input id. */
  value: string | FormValues;
  /** A form's submission: the value its id carries after the ref (which part of the form it was). */
  via?: string;
  platform: Platform;
  user: {
    id: string;
    name?: string;
    bot?: boolean;
    /** Discord: the clicker's role ids in the guild. */
    roles?: string[];
  };
  /** The message the button was on, when it was on one. */
  messageId?: string;
  /** Slack: whether the clicker is in one of these user groups (asked of Slack when needed). */
  inGroups?(groups: string[]): Promise<boolean>;
  /** Answers only the person who clicked (ephemeral where the platform allows it). */
  respond(text: string): Promise<void>;
}

/** A name from the command catalog (`COMMANDS` in ./commands.ts, the one place commands are defined). */
export type { Command, CommandName } from "./commands.js";

/**
 * What an adapter calls into: the dispatcher. It dedupes, queues per thread, runs the
 * agent and drives the `Reply` with the agent's events. Never throws.
 */
export interface TurnRunner {
  handle(inbound: Inbound): Promise<void>;
  /** Runs a command and returns the text to show (ephemeral where possible). */
  command(cmd: Command): Promise<string>;
  /**
   * True when Switchboard is in this thread (to follow threads without a mention): it has
   * a session or a turn there, or took the thread's opening message (`opening`: that
   * message's id as deduplicated), whose turn may not have begun yet.
   */
  knows(key: ThreadKey, opening?: string): Promise<boolean>;
  /** Marks an event id as seen; false if it was already seen (for events handled outside `handle`). */
  firstSight(id: string): Promise<boolean>;
  /**
   * An id `firstSight` found taken, asked again: true when the process that took it
   * stopped before the message was stored, and the id is this process's now (waiting, at
   * most a heartbeat's life, for a live one to store it or to stop; see `Dedupe.redelivered`).
   */
  redelivered?(id: string, waits?: boolean): Promise<boolean>;
  /**
   * A click or form submission; answers the person through `interaction.respond`, and
   * returns what the platform must do before acknowledging it, if anything. Never throws.
   */
  interact(interaction: Interaction): Promise<InteractionReply | void>;
  /**
   * Whether the access lists admit a message, asked by an adapter before it shows anything
   * (a reaction, a thread): `tell` means refused, with `REFUSED_NOTE` to show the person
   * (at most once an hour each), `silent` refused without a word. `handle` checks again.
   */
  admit?(who: Pick<Inbound, "platform" | "channel" | "user" | "from">): "yes" | "tell" | "silent";
  /**
   * `/prompt name key=value …`: the prompt's text to ask as the person's message, or a
   * sentence for them; with `forms`, a form for the required arguments still missing, of at
   * most `fieldsPerForm` inputs.
   */
  prompt?(text: string, opts?: PromptOptions): Promise<PromptOutcome>;
  /** A submitted prompt form (its id's value is PROMPT_FORM): run as `/prompt` with the typed arguments. */
  promptForm?(ref: string, values: FormValues): Promise<PromptOutcome>;
  /**
   * Stops the thread's answer in progress (see Dispatcher.stop); the sentence is for `by`.
   * `inGroups`: as on an Interaction, for approvers listed by Slack user group.
   */
  stop?(
    key: ThreadKey,
    by: { id: string; name?: string },
    inGroups?: Interaction["inGroups"],
  ): Promise<string>;
}

/** What every platform adapter is built from (see src/app.ts). */
export interface AdapterDeps {
  /**
   * What an adapter must remember across restarts and replicas (a user's last thread for
   * slash commands, Slack assistant threads, renamed Discord threads).
   */
  state: StateStore;
  runner: TurnRunner;
  config: Config;
  secrets: Secrets;
  /** Model ids a user may pick with `/model` (for autocomplete and validation). */
  models: () => string[];
  /** The connected servers' prompts as `server/name` (for autocomplete). */
  prompts?: () => string[];
  /** Prompts that need no arguments, as the Slack assistant pane offers them (`/prompt server/name`). */
  promptSuggestions?: () => Array<{ title: string; message: string }>;
  /** Counts a failed platform API call (for /metrics); adapters call it on errors and 429s. */
  platformError?: (rateLimited: boolean) => void;
}
