import type { WebClient } from "@slack/web-api";
import type { Artifact } from "../../core/artifacts.js";
import { log } from "../../log.js";
import type { Question, Reply, ReplyAddress, ResumeFrom, TextSink } from "../../runtime/contract.js";
import type { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { StreamWriter } from "../../runtime/stream.js";
import type { AgentSessions } from "./agent-sessions.js";
import { uploadArtifact } from "./files.js";
import { feedbackBlock, slackMessageOps } from "./message-ops.js";
import { toSlackMarkdown } from "./mrkdwn.js";
import { NativeStream, type NativeStreamOptions } from "./native-stream.js";
import { sendNotice } from "./notices.js";
import { offerStopLater, postQuestion, settleQuestion, showRatingButtons } from "./reply-offers.js";
import { ResumedThread } from "./resumed-reply.js";
import type { StatusClears } from "./status-clears.js";
import { type StatusRefresh, threadStatusRefresh } from "./status-refresh.js";
import { setThreadTitle } from "./thread-title.js";
import { tellUnwritable } from "./unwritable.js";

/**
 * Characters per Slack message. `markdown_text` takes 12,000, but Slack truncates very
 * long messages and `chat.update` reportedly refuses long text with `msg_too_long`, so
 * each message stays under 4,000.
 */
export const SLACK_MESSAGE_LIMIT = 3_900;

/** Where a reply goes: always a thread (the session), in a channel or a DM. */
export interface SlackPlace {
  team: string;
  channel: string;
  threadTs: string;
  /** The asker: receives ephemeral notices; recipient of native streams. */
  user: string;
  /** An "Agents & AI Apps" thread: status and title go through assistant.threads.*. */
  assistant: boolean;
  /** The thread had a reply before this one (the message answered is one): see `PrivatePlace`. */
  replied?: boolean;
}

export interface ReplyDeps {
  /** A client with automatic retries off: every write happens at most once. */
  web: WebClient;
  /** The workspace's write scheduler, shared by every reply (the one `web` writes through). */
  scheduler: WriteScheduler;
  intervalMs: number;
  /** Native text streaming (chat.startStream...), or undefined for post + update. */
  native?: Omit<NativeStreamOptions, "intervalMs">;
  /** For reading a message back (a resumed reply); `web` when not given. */
  reads?: WebClient;
  /** The bot's own `bot_id`: a resumed reply looks for a message its dead process never recorded among the bot's. */
  botId?: string;
  /** The workspace's agent sessions: the thread's status and title in Slack. */
  sessions?: AgentSessions;
  /** What took the workspace's thread statuses away, shared by its replies (see StatusClears). */
  clears?: StatusClears;
}

/** The status line under a posted answer (when Slack's thread status is not used). */
const statusLine = (text: string) => `_${text}_`;

/**
 * Why a Stop offer is called off: one shared reason, since `abort()` without one makes a
 * DOMException with its stack for every answer (nothing reads it).
 */
const ANSWER_ENDED = new Error("the answer ended before its Stop offer was shown");

/** One turn's way back into its Slack thread. */
export class SlackReply implements Reply {
  private writer: StreamWriter | undefined;
  private native: NativeStream | undefined;
  private lastStatus = "";
  /** Where the thread stood (see StatusClears) when this reply last set its status. */
  private statusSince = 0;
  private sessionStarted = false;
  /** Never to be answered (see `declined`). */
  private refused = false;
  private recorder: ((address: ReplyAddress) => Promise<void>) | undefined;
  private keys: ((index: number) => string) | undefined;
  /** The answer's rating ref: its buttons go under it once it has finished (see offerFeedback). */
  private rating: string | undefined;
  /** The answer is finishing (not failing): its final write carries the rating; `rated` once one has. */
  private finishing = false;
  private rated = false;
  /** Another process answers the message (see `Reply.leftToOthers`). */
  left = false;
  /** Aborted when the answer ends: a Stop offer not yet shown is never shown. */
  private readonly stopOffer = new AbortController();
  /** A resumed reply's thread, read once for all it needs to know. */
  private readonly resumed: ResumedThread | undefined;
  /** Sets the thread's status again before Slack's 2-minute timeout takes it while the answer is worked on. */
  private readonly refresh: StatusRefresh;
  /** A question, a file or a notice for everyone went into the thread (see `threadActive`). */
  private posted = false;

  /**
   * `resume`: a reply written earlier, maybe by another process, to go on in its last
   * message. It goes on with post + update: a new native stream would need the asker as
   * its recipient, and an open one is stopped first (its state died with its process).
   */
  constructor(
    private readonly deps: ReplyDeps,
    readonly place: SlackPlace,
    private readonly resume?: ResumeFrom,
  ) {
    if (resume) this.resumed = new ResumedThread(deps.web, deps.reads ?? deps.web, place, resume, deps.botId);
    this.refresh = threadStatusRefresh(deps, place);
  }

  onAddress(record: (address: ReplyAddress) => Promise<void>): void {
    this.recorder = record;
  }

  leftToOthers(): void {
    this.left = true;
  }

  keyPosts(keyOf: (index: number) => string): void {
    this.keys = keyOf;
  }

  private async record(address: ReplyAddress): Promise<void> {
    await this.recorder?.(address);
  }

  /**
   * Where status text goes. A native stream cannot take a status line back (appends are
   * final), so with native streaming, as in assistant threads, the status is Slack's own
   * thread status (`assistant.threads.setStatus`, which Bolt also offers for any thread).
   */
  private get statusInThread(): boolean {
    return this.place.assistant || this.nativeOptions !== undefined;
  }

  private get nativeOptions(): ReplyDeps["native"] {
    return this.resume ? undefined : this.deps.native;
  }

  /**
   * A post + update writer; `rendered` when its text is already in Slack's Markdown.
   * `onMessages` is told when it posts or removes a message (default: record its own):
   * then it carries on after a native stream's messages, its first being the reply's `first`.
   */
  private postWriter(rendered = false, onMessages?: () => Promise<void>, first = 0): StreamWriter {
    const ops = slackMessageOps(this.deps.web, this.place, this.deps.reads, this.resumed?.taken, {
      blocks: () => (this.finishing && this.rating ? [feedbackBlock(this.rating)] : undefined),
      shown: () => {
        this.rated = true;
      },
    });
    // Numbered as the reply's messages, the streamed ones first: a takeover finds them by these keys.
    const keyOf = this.keys;
    const keys = keyOf && first > 0 ? (index: number) => keyOf(first + index) : keyOf;
    const writer: StreamWriter = new StreamWriter(ops, {
      ...(keys ? { keys } : {}),
      limit: SLACK_MESSAGE_LIMIT,
      intervalMs: this.deps.intervalMs,
      scheduler: this.deps.scheduler,
      render: rendered ? undefined : toSlackMarkdown,
      statusLine: !this.statusInThread,
      onMessages: onMessages ?? ((messages) => this.record({ messages })),
      ...(this.resumed ? { resume: this.resumed.writerResume() } : {}),
    });
    return writer;
  }

  /** The sink, made on first use (a status may come before any text). */
  private sink(): TextSink {
    const native = this.nativeOptions;
    if (!native) {
      this.writer ??= this.postWriter();
      return this.writer;
    }
    this.native ??= new NativeStream(
      this.deps.web,
      this.deps.scheduler,
      { ...this.place, botId: this.deps.botId },
      { ...native, intervalMs: this.deps.intervalMs },
      toSlackMarkdown,
      (onMessages, first) => this.postWriter(true, onMessages, first),
      (address) => this.record(address),
    );
    return this.native;
  }

  async status(text: string): Promise<void> {
    if (text === this.lastStatus) return;
    this.lastStatus = text;
    if (this.statusInThread) {
      await this.setAssistantStatus(text);
      return;
    }
    this.writer ??= this.postWriter();
    this.writer.status(statusLine(text));
  }

  /** Best effort: a status that does not show must never end the turn. */
  async setAssistantStatus(text: string): Promise<void> {
    this.statusSince = this.deps.clears?.since(this.place) ?? 0;
    this.refresh.set(text);
    try {
      await this.deps.web.assistant.threads.setStatus({
        channel_id: this.place.channel,
        thread_ts: this.place.threadTs,
        status: text,
      });
    } catch (err) {
      log.debug({ err }, "assistant status not set");
    }
  }

  stream(): TextSink {
    // A reply rebuilt for a resumed turn starts its session here; an event's, started when
    // acknowledged, again if the thread's earlier answer has moved it on since (see startSession).
    void this.startSession();
    void this.restoreStatus();
    this.refresh.start();
    const writer = this.sink();
    const clear = () => this.workEnded();
    return {
      write: (delta) => {
        if (delta !== "") this.refresh.quiet();
        writer.write(delta);
      },
      finish: async (how) => {
        const rated = how?.answered === true && this.rating !== undefined;
        this.finishing = rated;
        if (rated && this.native) this.native.closing = [feedbackBlock(this.rating!)];
        try {
          await writer.finish().finally(clear);
        } catch (err) {
          // The last write failed for good: the turn ends in error, nothing waits on it, so
          // the session ends as `fail` leaves it, never kept working with Slack's stop button.
          void this.endSession();
          throw err;
        }
        // Never awaited: a session's status has its own budget (Tier 3), and the turn, its
        // questions and the thread's lock must not wait for it.
        void this.endSession(how?.answered === true ? "active" : "suspended");
        // Never awaited: the turn (and the thread's lock) must not wait for a rating's budget.
        if (rated) void this.showRating();
      },
      fail: (message) =>
        writer
          .fail(message)
          .finally(clear)
          .finally(() => void this.endSession()),
      abandon: async () => {
        this.refresh.stop();
        this.stopOffer.abort(ANSWER_ENDED);
        await writer.abandon?.();
        this.deps.clears?.note(this.place);
      },
      broken: () => writer.broken?.(),
    };
  }

  /** The answer is over, or will never be written: nothing shows the thread worked on any more. */
  private async workEnded(): Promise<void> {
    this.refresh.stop();
    this.stopOffer.abort(ANSWER_ENDED);
    if (this.statusInThread && this.lastStatus !== "") await this.setAssistantStatus("");
    this.deps.clears?.note(this.place);
  }

  /**
   * See `Reply.declined`: the acknowledgement's status and working session end here, not by
   * a stream. A rebuilt reply's was started by the process that handed the message over.
   */
  async declined(): Promise<void> {
    this.refused = true;
    await this.workEnded();
    await (this.resume ? this.deps.sessions?.endLeft(this.place) : this.endSession());
  }

  async upload(a: Artifact): Promise<void> {
    try {
      await uploadArtifact(this.deps.web, this.place, a);
      this.posted = true;
    } finally {
      // Files come after the answer's end, and a message that waits for the thread may be acknowledged meanwhile.
      this.deps.clears?.note(this.place);
    }
  }

  /**
   * The status this reply set, again as its answer starts, where something took it away
   * since (see StatusClears): a message acknowledged while the thread's earlier answer
   * was written has lost its "is thinking…" by the time its own answer starts.
   */
  private async restoreStatus(): Promise<void> {
    const { clears } = this.deps;
    if (!clears || !this.statusInThread || this.lastStatus === "") return;
    if (clears.since(this.place) !== this.statusSince) await this.setAssistantStatus(this.lastStatus);
  }

  /**
   * The thread's agent session is `processing`: Slack shows it, with its stop button. A
   * message that waited behind the thread's answer is acknowledged while that answer is
   * written, whose end then moves the session on: so asked again as the answer starts, where
   * Slack took the session (one it refused is not asked twice for one answer), and nothing
   * is sent while it is `processing` already.
   */
  async startSession(): Promise<void> {
    const sessions = this.deps.sessions;
    // Refused before its acknowledgement (a slow :eyes:) got here: a session started now would stay working.
    if (!sessions || this.refused || (this.sessionStarted && !sessions.has(this.place))) return;
    this.sessionStarted = true;
    await sessions.status(this.place, "processing");
  }

  /** After the answer (Slack does not move it on): `active`, or `suspended` while it waits for an approval or a takeover. */
  private async endSession(status: "active" | "suspended" = "active"): Promise<void> {
    await this.deps.sessions?.status(this.place, status);
  }

  /**
   * An assistant thread's title, or its agent session's name: a channel thread without a
   * session (sessions off or refused, or its status never sent under load) shows none.
   */
  get takesTitle(): boolean {
    return this.place.assistant || this.deps.sessions?.has(this.place) === true;
  }

  async title(t: string): Promise<void> {
    await setThreadTitle(this.deps, this.place, t);
  }

  /**
   * The thread has a reply, so a private notice can show in it (see `PrivatePlace`): the
   * message answered is one, or the bot wrote in the thread. A top-level mention's or
   * DM's own thread has none until the answer's first message.
   */
  private get threadActive(): boolean {
    if (this.place.replied || this.posted || (this.resume?.messages.length ?? 0) > 0) return true;
    return (this.native?.address.messages.length ?? 0) > 0 || (this.writer?.messageIds.length ?? 0) > 0;
  }

  /** Privately, never in the thread (see sendNotice), unless nobody is known to show it to. */
  async notice(text: string): Promise<void> {
    if (await sendNotice(this.deps.web, this.place, text, this.threadActive)) {
      this.posted = true;
      this.deps.clears?.note(this.place);
    }
  }

  /** The answer was refused its place (see `Reply.unwritable`): its asker learns why, privately. */
  async unwritable(err: unknown): Promise<void> {
    const { channel, threadTs, user } = this.place;
    await tellUnwritable(this.deps.web, { channel, user, ...(this.threadActive ? { threadTs } : {}) }, err);
  }

  /**
   * 👍 / 👎 under the answer once it has finished, as Slack's AI apps show them: a
   * `context_actions` block with `feedback_buttons`. A native stream takes it with its last
   * `chat.stopStream`, an answer posted and updated with its final write (its text in a
   * `markdown` block beside it, the Markdown it was written with): no call of its own.
   * Only when the final text needed no new write does it take one more update, and only
   * when the workspace's `chat.update` budget has room at that moment: Tier 3 is shared by
   * every answer, and a rating is worth less than anyone's text.
   */
  offerFeedback(ref: string): void {
    this.rating = ref;
  }

  /** After a finished answer: the buttons, when the native stream did not carry them. */
  private async showRating(): Promise<void> {
    const ref = this.rating;
    if (!ref || this.rated || this.native?.closedWith) return;
    const last = (this.native ?? this.writer)?.lastMessage;
    if (!last || last.text === "") return;
    await showRatingButtons(this.deps, this.place.channel, last, ref);
  }

  /**
   * A Stop button for the asker, in a private message under the thread, once the answer
   * has taken longer than a glance: a message written with `markdown_text` cannot carry
   * buttons, and a quick answer needs none. A click after the end is told so.
   */
  offerStop(ref: string): void {
    const { user } = this.place;
    if (!user) return;
    const { sessions } = this.deps;
    // A working agent session has Slack's own stop button, which comes to the same Stop.
    // Asked when the offer is due: whether this thread's session started is known only then.
    const shownElsewhere = sessions ? () => sessions.working(this.place) : undefined;
    offerStopLater(this.deps, { ...this.place, user }, ref, this.stopOffer.signal, shownElsewhere);
  }

  async ask(question: Question): Promise<string> {
    const ts = await postQuestion(this.deps.web, this.place, question);
    this.posted = true;
    this.deps.clears?.note(this.place);
    if (!ts) throw new Error("Slack posted the question without returning its ts");
    return ts;
  }

  async settle(messageId: string, text: string): Promise<void> {
    await settleQuestion(this.deps.web, this.place.channel, messageId, text);
  }
}
