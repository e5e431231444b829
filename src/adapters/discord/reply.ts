import { type AttachmentBuilder, DiscordAPIError, RateLimitError } from "discord.js";
import type { Artifact } from "../../core/artifacts.js";
import { log } from "../../log.js";
import type { Question, Reply, ReplyAddress, ResumeFrom, TextSink } from "../../runtime/contract.js";
import { interactionId } from "../../runtime/interaction-ids.js";
import { MessageGoneError } from "../../runtime/message-ops.js";
import type { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { type MessageOps, RateLimitedError, StreamWriter } from "../../runtime/stream.js";
import { tablesToCodeBlocks } from "../../runtime/tables.js";
import { ReplyFiles } from "./attach.js";
import { uploadLimit } from "./files.js";
import { Typing } from "./typing.js";
import { isRefusal, unwritableSentence } from "./unwritable.js";
import { GLOBAL } from "./write-policy.js";

/** Discord's content limit for bots (4,000 is a user Nitro perk). */
export const DISCORD_MESSAGE_LIMIT = 2_000;
/** The status line under the answer: Discord subtext. */
const statusLine = (text: string) => `-# ${text}`;
/** A status line a crashed process left at the end of a message, with the blank line before it. */
const LEFT_STATUS = /(?:^|\n\n)-# [^\n]*$/;

export interface OutgoingMessage {
  content?: string;
  files?: AttachmentBuilder[];
}

/** A place's message writes; files go with a post or an edit where Discord allows it. */
export interface PlaceOps {
  /** `controls`: buttons to show under the text (Stop while it is written); absent leaves them as they are. */
  /**
   * `key`: the message's idempotency key, sent as an enforced nonce where the place
   * takes one (`keyed`): Discord then answers a second post of it with the message
   * already there.
   */
  post(text: string, files?: AttachmentBuilder[], controls?: QuestionRow[], key?: string): Promise<string>;
  /** Posts honour `key` (a channel's messages do; an interaction's follow-ups take no nonce). */
  keyed?: boolean;
  edit(id: string, text: string, files?: AttachmentBuilder[], controls?: QuestionRow[]): Promise<void>;
  remove?(id: string): Promise<void>;
  /** A message's text as Discord has it now; null when the message is gone. */
  read?(id: string): Promise<string | null>;
  /** The write scheduler's buckets of this place's message writes. */
  buckets?(): readonly string[];
  /** Posts a message with buttons (raw API components); resolves with its id. */
  ask?(text: string, components: QuestionRow[]): Promise<string>;
  /** Edits a message to `text` and removes its buttons. */
  settle?(id: string, text: string): Promise<void>;
  /** Removes a message's buttons, leaving its text. */
  clearControls?(id: string): Promise<void>;
}

/** One action row of buttons, in the API's shape (discord.js sends it as it is). */
export interface QuestionRow {
  type: 1;
  components: Array<
    | { type: 2; style: 1 | 2 | 4; label: string; custom_id: string }
    /** A link button: opens its page, and Discord tells the app nothing. */
    | { type: 2; style: 5; label: string; url: string }
  >;
}

/** A rating's buttons not shown within this long after the answer are not shown. */
const RATING_LATE_MS = 10_000;

/** Discord's limit on a link button's URL. */
const LINK_URL_MAX = 512;
const MESSAGE_MAX = 2000;

/**
 * A question as Discord shows it: its text and one row of up to five buttons. A link too
 * long for a button (a sign-in page's URL with its state and code challenge) goes in the
 * text instead, whole: cut, it would open the wrong page.
 */
export function questionMessage(question: Question): { text: string; components: QuestionRow[] } {
  const style = (s: Question["choices"][number]["style"]): 1 | 2 | 4 =>
    s === "primary" ? 1 : s === "danger" ? 4 : 2;
  const inText = question.choices.filter((c) => c.url !== undefined && c.url.length > LINK_URL_MAX);
  const linked = inText.map((c) => `\n${c.label}: <${c.url}>`).join("");
  // Longer than a whole message could hold (no real page's address is): said, not cut.
  const links =
    linked.length > MESSAGE_MAX / 2 ? "\n(The page's address is too long for Discord to show it.)" : linked;
  const room = MESSAGE_MAX - links.length;
  const text = question.text.length > room ? `${question.text.slice(0, room - 1)}…` : question.text;
  const buttons = question.choices
    .filter((c) => !inText.includes(c))
    .slice(0, 5)
    .map((c): QuestionRow["components"][number] =>
      c.url
        ? { type: 2 as const, style: 5 as const, label: c.label.slice(0, 80), url: c.url }
        : {
            type: 2 as const,
            style: style(c.style),
            label: c.label.slice(0, 80),
            custom_id: interactionId(question.ref, c.value),
          },
    );
  return { text: text + links, components: buttons.length > 0 ? [{ type: 1, components: buttons }] : [] };
}

/** Where one reply is written: a channel or thread, or an interaction's webhook. */
export interface Place {
  ops: PlaceOps;
  /** The channel the messages are in (for the reply's address). */
  channel?: string;
  /** Sends a message that is not part of the streamed answer (files, sentences). */
  send(message: OutgoingMessage): Promise<void>;
  /** An informational answer, ephemeral where possible. */
  notice(text: string): Promise<void>;
  typing?(): Promise<void>;
  /** Renames the thread; absent when the bot should not rename this place. */
  rename?(title: string): Promise<void>;
  /** A thread being opened: resolves once writes can go there (to the thread or, failing that, its channel). */
  ready?: Promise<unknown>;
  /** True once the bot opened a thread for this reply, so the person sees it begin. */
  opened?(): boolean;
  /** Tells the asker a sentence outside this place, when nothing can be written here. */
  elsewhere?(text: string): Promise<void>;
  /** The largest file Discord takes here, when it says (an interaction's limit, a guild's boosts). */
  fileLimit?(): number | undefined;
}

export interface ReplyOptions {
  /** The bot's write scheduler, shared by every reply. */
  scheduler: WriteScheduler;
  intervalMs: number;
  maxFileBytes: number;
  /** The bot opened a thread for this reply: the person sees it begin before its first message. */
  shownAlready?: boolean | (() => boolean);
}

/** A discord.js rate-limit rejection as the writer understands it. */
export function asWriteError(err: unknown): unknown {
  if (err instanceof RateLimitError) {
    return new RateLimitedError(err.retryAfter, { cause: err, ...(err.global ? { bucket: GLOBAL } : {}) });
  }
  if (err instanceof DiscordAPIError && err.code === UNKNOWN_MESSAGE)
    return new MessageGoneError({ cause: err });
  return err;
}

/** Discord's error code for a message that is not there (deleted). */
const UNKNOWN_MESSAGE = 10008;

/** One turn's way back into its Discord thread, DM or interaction. */
export class DiscordReply implements Reply {
  /** Discord takes up to 10 files on the answer's final post or edit. */
  readonly filesWithAnswer = true;
  private writer: StreamWriter | undefined;
  /** The Stop button's row while the answer is written; see offerStop. */
  private stopRow: QuestionRow[] | undefined;
  /** The answer's 👍 / 👎, once offered; `rated` once a write showed them. */
  private rating: QuestionRow | undefined;
  private rated = false;
  /** The answer is finishing (not failing): its final write may carry the rating. */
  private finishing = false;
  /** Messages last written with the Stop button: it comes off each once the answer ends. */
  private readonly withStop = new Set<string>();
  private readonly typing: Typing;
  private readonly files: ReplyFiles;
  private lastStatus = "";
  private record: ((address: ReplyAddress) => Promise<void>) | undefined;
  private keys: ((index: number) => string) | undefined;

  /** `resume`: a reply written earlier (maybe by another process), continued in its last message. */
  constructor(
    private readonly place: Place,
    private readonly opts: ReplyOptions,
    private readonly resume?: ResumeFrom,
  ) {
    this.typing = new Typing(place.typing?.bind(place));
    this.files = new ReplyFiles({
      send: (message) => place.send(message),
      attach: (id, text, files) => place.ops.edit(id, text, files),
      answer: () => this.writer?.lastMessage,
      scheduler: opts.scheduler,
      buckets: () => place.ops.buckets?.() ?? [GLOBAL],
      maxFileBytes: () => uploadLimit(opts.maxFileBytes, place.fileLimit?.()),
      asWriteError,
    });
  }

  onAddress(record: (address: ReplyAddress) => Promise<void>): void {
    this.record = record;
  }

  keyPosts(keyOf: (index: number) => string): void {
    this.keys = keyOf;
  }

  private sink(): StreamWriter {
    if (this.writer) return this.writer;
    const { ops } = this.place;
    // Files handed over while the answer is written go with its final write.
    this.files.holding = true;
    const writes: MessageOps = {
      post: (text, write) =>
        this.files.withFinal(write?.final, async (files) => {
          const controls = this.controlsFor(write?.final);
          const id = await ops.post(text, files, controls, write?.key);
          this.shown(id, controls);
          return id;
        }),
      edit: (id, text, write) =>
        this.files.withFinal(write?.final, async (files) => {
          const controls = this.controlsFor(write?.final);
          await ops.edit(id, text, files, controls);
          this.shown(id, controls);
        }),
      remove: ops.remove?.bind(ops),
      ...(ops.buckets ? { buckets: () => ops.buckets!() } : {}),
      ...(ops.keyed ? { postsDeduped: true } : {}),
    };
    const read = ops.read?.bind(ops);
    this.writer = new StreamWriter(writes, {
      limit: DISCORD_MESSAGE_LIMIT,
      intervalMs: this.opts.intervalMs,
      scheduler: this.opts.scheduler,
      shownAlready: this.place.opened ?? this.opts.shownAlready ?? false,
      ...(this.place.ready ? { ready: this.place.ready } : {}),
      render: tablesToCodeBlocks,
      statusLine: true,
      ...(this.keys && ops.keyed ? { keys: this.keys } : {}),
      onMessages: async (messages) => {
        await this.record?.({ messages, ...(this.place.channel ? { channel: this.place.channel } : {}) });
      },
      ...(this.resume && read
        ? {
            resume: {
              messages: this.resume.messages,
              shown: async (id: string) => (await read(id))?.replace(LEFT_STATUS, "") ?? null,
              ...(this.resume.retake === undefined ? {} : { retake: this.resume.retake }),
            },
          }
        : {}),
    });
    return this.writer;
  }

  async status(text: string): Promise<void> {
    this.typing.start();
    if (text === this.lastStatus) return;
    this.lastStatus = text;
    // Subtext: small grey line under the answer, dropped from the final text by the writer.
    this.sink().status(statusLine(text));
  }

  stream(): TextSink {
    const writer = this.sink();
    this.typing.start();
    const end = <T>(p: Promise<T>) =>
      p.finally(() => {
        this.typing.stop();
        this.files.release();
      });
    return {
      write: (delta) => {
        this.typing.stop();
        writer.write(delta);
      },
      finish: (how) => {
        this.finishing = how?.answered === true;
        // The rating's own edit is never awaited: the turn must not wait for its budget.
        return end(writer.finish().finally(() => this.dropStop())).then(() => {
          if (this.finishing) void this.showRating();
        });
      },
      fail: (message) => end(writer.fail(message).finally(() => this.dropStop())),
      // Files held for the final write stay unsent: the process that has the reply runs their step again.
      abandon: () => writer.abandon().finally(() => this.typing.stop()),
      broken: () => writer.broken(),
    };
  }

  /**
   * 👍 / 👎 under the answer once it has finished: they replace Stop in the answer's final
   * write, or, when the final text needed no new write, come in one edit of their own that
   * waits behind every other write (dropped when it could not go out within 10 s).
   */
  offerFeedback(ref: string): void {
    this.rating = {
      type: 1,
      components: [
        { type: 2, style: 2, label: "👍", custom_id: interactionId(ref, "good") },
        { type: 2, style: 2, label: "👎", custom_id: interactionId(ref, "bad") },
      ],
    };
  }

  private async showRating(): Promise<void> {
    const row = this.rating;
    const last = this.writer?.lastMessage;
    if (!row || this.rated || !last) return;
    await this.opts.scheduler
      .as("background", () => this.place.ops.edit(last.id, last.text, undefined, [row]), {
        dropAfterMs: RATING_LATE_MS,
        requeue: false,
      })
      .catch((err: unknown) => log.debug({ err: asWriteError(err) }, "rating buttons not shown"));
  }

  /** Puts a Stop button under the answer while it is written (its clicks carry `ref`). */
  offerStop(ref: string): void {
    this.stopRow = questionMessage({
      ref,
      text: "",
      choices: [{ value: "stop", label: "Stop", style: "danger" }],
    }).components;
  }

  private controlsFor(final: boolean | undefined): QuestionRow[] | undefined {
    // A finished answer's final write carries its rating instead of Stop.
    if (final && this.finishing && this.rating) return [this.rating];
    if (!this.stopRow) return undefined;
    return final ? [] : this.stopRow;
  }

  private shown(id: string, controls: QuestionRow[] | undefined): void {
    if (controls === undefined) return;
    if (this.rating && controls[0] === this.rating) {
      this.rated = true;
      this.withStop.delete(id);
    } else if (controls.length > 0) this.withStop.add(id);
    else this.withStop.delete(id);
  }

  /**
   * An answer's earlier messages (and a last one whose final text needed no new write)
   * still show Stop: each loses it in one edit, without changing its text.
   */
  private async dropStop(): Promise<void> {
    const { ops } = this.place;
    const clear = ops.clearControls?.bind(ops);
    this.stopRow = undefined;
    if (!clear) return;
    const ids = [...this.withStop];
    this.withStop.clear();
    // A live Stop under a finished answer lies: these finish the answer as its final write
    // does, in its lane, not droppable, and the scheduler requeues each after a 429.
    await Promise.all(
      ids.map((id) =>
        this.opts.scheduler
          .run({
            lane: "final",
            buckets: () => ops.buckets?.() ?? [GLOBAL],
            what: "Stop button off",
            run: () => clear(id),
          })
          .catch((err: unknown) => log.warn({ err, id }, "Stop button not removed")),
      ),
    );
  }

  /**
   * Resolves once the file is on Discord (or a sentence says why it could not be), and
   * rejects when sending failed. During the answer (after `stream()`, before it finishes)
   * files wait for its final write; see `ReplyFiles`.
   */
  upload(a: Artifact): Promise<void> {
    return this.files.add(a);
  }

  /**
   * Only a thread the bot opened is renamed with its title: not an answer that went to
   * the channel because the thread could not be opened (no model call for a title nobody sees).
   */
  get takesTitle(): boolean {
    return this.place.rename !== undefined && (this.place.opened?.() ?? true);
  }

  async title(t: string): Promise<void> {
    const rename = this.place.rename;
    if (!rename) return;
    // Renames are limited to about 2 per 10 minutes: fire once, never hold the answer for it.
    void rename(t.slice(0, 100)).catch((err: unknown) =>
      log.warn({ err: asWriteError(err) }, "thread not renamed"),
    );
  }

  async notice(text: string): Promise<void> {
    await this.place.notice(text);
  }

  async unwritable(err: unknown): Promise<void> {
    // An outage that outlasted the retries says nothing a person can act on.
    if (!isRefusal(err)) return;
    await this.place.elsewhere?.(unwritableSentence(err, this.place.channel));
  }

  async ask(question: Question): Promise<string> {
    if (!this.place.ops.ask) throw new Error("This Discord place cannot show buttons");
    const { text, components } = questionMessage(question);
    return this.place.ops.ask(text, components);
  }

  async settle(messageId: string, text: string): Promise<void> {
    if (!this.place.ops.settle) throw new Error("This Discord place cannot edit its questions");
    await this.place.ops.settle(messageId, text.length > 2000 ? `${text.slice(0, 1999)}…` : text);
  }
}
