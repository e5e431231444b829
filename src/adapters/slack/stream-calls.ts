import { type ChatStopStreamArguments, ErrorCode, type WebClient } from "@slack/web-api";
import { log } from "../../log.js";
import { WriteFenced } from "../../runtime/scheduler/write-fence.js";
import {
  type CallOptions,
  type Lane,
  WriteDropped,
  type WriteScheduler,
} from "../../runtime/scheduler/write-scheduler.js";
import { readShown, ThreadSnapshot } from "./resume.js";
import { retryAfterMs } from "./retry-after.js";

export interface StreamPlace {
  team: string;
  channel: string;
  threadTs: string;
  /** The asker: Slack requires a recipient for streams outside DMs. */
  user: string;
  /** The bot's bot_id, as the adapter read it at start: a lost start is looked up by it. */
  botId?: string;
}

/** A stream call failed for good: the rest of the reply goes the post + update way. */
export class StreamBroken extends Error {}

/**
 * An append called off by its signal while it waited for its budget (the answer ended):
 * nothing was sent, and the final append carries its text with the rest.
 */
export class AppendCalledOff extends Error {}

/**
 * How much earlier than the local clock said a start was asked for its message may be
 * stamped: Slack's clock is not ours, and a message missed by a few ms shows twice.
 */
const CLOCK_SKEW_MS = 1_000;

/**
 * Slack never said what became of the call: the connection dropped, it timed out, or an
 * HTTP error came instead of Slack's answer. Slack may have applied it. An `ok:false`
 * answer or a 429 applied nothing, and neither did a call the scheduler never sent.
 */
function unanswered(err: unknown): boolean {
  if (err instanceof WriteDropped || err instanceof WriteFenced) return false;
  const code = (err as { code?: string } | undefined)?.code;
  return code !== ErrorCode.PlatformError && code !== ErrorCode.RateLimitedError;
}

/** 429s in a row on one stream call before giving up on streaming, and the longest wait. */
export const ATTEMPTS = 3;
const MAX_RETRY_WAIT_MS = 10_000;

/** A stream call that failed is not tried again: no short 429, or its attempts are spent. */
function retryGivenUp(err: unknown, attempt: number): boolean {
  const wait = retryAfterMs(err);
  return wait === null || attempt >= ATTEMPTS || wait > MAX_RETRY_WAIT_MS;
}

/**
 * The Web API side of one reply's native streams (`chat.startStream`, `appendStream`,
 * `stopStream`) with the retry policy for 429s, and which messages they made: every
 * start and stop is reported (and awaited) before the reply goes on.
 */
export class StreamCalls {
  /** The ts of every stream started, in order. */
  readonly started: string[] = [];
  /** The last stream started is still open. */
  open = false;
  /** When the stream being started was asked for (see `ReplyAddress.starting`); null once its ts is known. */
  starting: number | null = null;
  /** The text each stream shows as far as Slack acknowledged it (what a lost answer is checked against). */
  private readonly shown = new Map<string, string>();

  constructor(
    private readonly web: WebClient,
    /** The workspace's write scheduler (the one `web` writes through). */
    private readonly scheduler: WriteScheduler,
    private readonly place: StreamPlace,
    private readonly changed: () => Promise<void>,
  ) {}

  /**
   * Starts a stream with `text` (ts null) or appends `text` to it; returns the stream's
   * ts. A stream starts only while Slack's Tier 2 budget for it has room: otherwise, as
   * on any failure but a short 429, `StreamBroken` hands the reply to post + update. A
   * 429 never wrote anything, so trying again cannot show the text twice. A call whose
   * answer was lost is looked up in the thread: applied, it counts as done (handed over
   * from before it, its text would show twice). `lane` is asked at every pick; `signal`
   * calls off an append still waiting for its turn (`AppendCalledOff`); `since`: when the
   * reply last wrote (the stalest thread's write goes first within a lane).
   */
  async send(
    ts: string | null,
    text: string,
    lane: Lane | (() => Lane),
    { signal, since }: Pick<CallOptions, "signal" | "since"> = {},
  ): Promise<string> {
    const waits = { ...(signal ? { signal } : {}), ...(since ? { since } : {}) };
    const { channel, threadTs, user, team } = this.place;
    for (let attempt = 1; ; attempt++) {
      try {
        if (ts !== null) {
          await this.scheduler.as(
            lane,
            () => this.web.chat.appendStream({ channel, ts, chunks: [{ type: "markdown_text", text }] }),
            { requeue: false, ...waits },
          );
          this.shown.set(ts, (this.shown.get(ts) ?? "") + text);
          return ts;
        }
        if (this.starting === null) {
          // Slack may make the message and the process die before its ts comes back: the
          // record says a start is on its way, so that a takeover looks for it (no key to find it by).
          this.starting = Date.now();
          await this.changed();
        }
        const res = await this.scheduler.as(
          lane,
          () =>
            this.web.chat.startStream({
              channel,
              thread_ts: threadTs,
              recipient_user_id: user,
              recipient_team_id: team,
              chunks: [{ type: "markdown_text", text }],
            }),
          { requeue: false, now: true, ...waits },
        );
        if (!res.ts) throw new Error("chat.startStream answered without a ts");
        return await this.opened(res.ts, text);
      } catch (err) {
        if (err instanceof WriteDropped && signal?.aborted) {
          throw new AppendCalledOff("the answer ended before the append's turn", { cause: err });
        }
        const landed = unanswered(err) ? await this.landed(ts, text, err) : null;
        if (landed !== null) return landed;
        // Given up, the reply goes on with post + update, whose posts carry their keys.
        const broken =
          err instanceof WriteDropped
            ? new StreamBroken("no budget to stream", { cause: err })
            : retryGivenUp(err, attempt)
              ? new StreamBroken("streaming failed", { cause: err })
              : null;
        if (broken) {
          if (ts === null) this.starting = null;
          throw broken;
        }
        // The scheduler paused the call's bucket: the next attempt waits for it there.
      }
    }
  }

  private async opened(ts: string, text: string): Promise<string> {
    this.started.push(ts);
    this.shown.set(ts, text);
    this.open = true;
    this.starting = null;
    await this.changed();
    return ts;
  }

  /**
   * Whether a call whose answer never came was applied, from the thread as Slack shows it
   * now: an append, when its message shows the text before it and then `text`; a start,
   * when the bot's one message since the start was asked for, not among the streams this
   * reply knows, shows `text` (found as a takeover finds a start its dead process never
   * recorded). The stream's ts when it was; null when it was not, or when that cannot be told.
   */
  private async landed(ts: string | null, text: string, err: unknown): Promise<string | null> {
    const { channel, threadTs } = this.place;
    try {
      if (ts !== null) {
        const before = this.shown.get(ts) ?? "";
        const now = await readShown(this.web, channel, threadTs, ts);
        if (now === before + text) {
          log.info(
            { err, ts },
            "chat.appendStream was applied though its answer was lost; going on after it",
          );
          this.shown.set(ts, now);
          return ts;
        }
        if (now !== null && now !== before)
          log.warn({ ts }, "a stream's text is not what was sent; it may show some of it twice");
        return null;
      }
      const since = this.starting;
      if (since === null) return null;
      const botId = this.place.botId ?? (await this.web.auth.test()).bot_id;
      if (!botId) return null;
      const thread = new ThreadSnapshot(this.web, channel, threadTs);
      const found = await thread.unrecorded(botId, since - CLOCK_SKEW_MS, this.started);
      if (found === null || (await thread.shown(found)) !== text) return null;
      log.info(
        { err, ts: found },
        "chat.startStream was applied though its answer was lost; streaming on in it",
      );
      return await this.opened(found, text);
    } catch (readErr) {
      log.warn({ err: readErr }, "the thread was not read back after a stream call's answer was lost");
      return null;
    }
  }

  /**
   * Ends a stream; true when `blocks` went with the stop. Its text is all out already, so
   * a failure here loses nothing. Blocks Slack refuses (an error it answered, such as
   * `invalid_blocks`: the stop did nothing) are left off and the stream stopped without
   * them, as the post + update writer does (see `withClosing`): a stream never stopped
   * stays "streaming" until Slack's lifetime ends it.
   */
  async stop(ts: string, attempts = ATTEMPTS, blocks?: unknown[]): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        // Final text's lane: a stream stops only after its last append, and Tier 2 allows as
        // many stops as starts, so no stop may be held behind the updates' reserve.
        await this.scheduler.as(
          "final",
          () =>
            this.web.chat.stopStream({
              channel: this.place.channel,
              ts,
              // Appended under the finished message (the answer's feedback buttons).
              ...(blocks ? { blocks: blocks as NonNullable<ChatStopStreamArguments["blocks"]> } : {}),
            }),
          {
            requeue: false,
          },
        );
        if (ts === this.started.at(-1)) {
          this.open = false;
          await this.changed();
        }
        return blocks !== undefined;
      } catch (err) {
        if (blocks && (err as { code?: string })?.code === ErrorCode.PlatformError) {
          log.warn(
            { error: (err as { data?: { error?: string } }).data?.error },
            "Slack refused the stream's stop with the rating buttons; stopping it without them",
          );
          blocks = undefined;
          continue;
        }
        if (retryGivenUp(err, attempt) || attempt >= attempts) {
          log.debug({ err, ts }, "chat.stopStream failed; the stream ends on its own");
          return false;
        }
      }
    }
  }
}
