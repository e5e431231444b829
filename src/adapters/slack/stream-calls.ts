import { type ChatStopStreamArguments, ErrorCode, type WebClient } from "@slack/web-api";
import { log } from "../../log.js";
import { type Lane, WriteDropped, type WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";

export interface StreamPlace {
  team: string;
  channel: string;
  threadTs: string;
  /** The asker: Slack requires a recipient for streams outside DMs. */
  user: string;
}

/** A stream call failed for good: the rest of the reply goes the post + update way. */
export class StreamBroken extends Error {}

/** 429s in a row on one stream call before giving up on streaming, and the longest wait. */
export const ATTEMPTS = 3;
const MAX_RETRY_WAIT_MS = 10_000;

export function retryAfterMs(err: unknown): number | null {
  const e = err as { code?: string; retryAfter?: number };
  return e?.code === ErrorCode.RateLimitedError ? Math.max(0, e.retryAfter ?? 1) * 1000 : null;
}

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
   * 429 never wrote anything, so trying again cannot show the text twice.
   */
  async send(ts: string | null, text: string, lane: Lane): Promise<string> {
    const { channel, threadTs, user, team } = this.place;
    for (let attempt = 1; ; attempt++) {
      try {
        if (ts !== null) {
          await this.scheduler.as(
            lane,
            () => this.web.chat.appendStream({ channel, ts, chunks: [{ type: "markdown_text", text }] }),
            { requeue: false },
          );
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
          { requeue: false, now: true },
        );
        if (!res.ts) throw new Error("chat.startStream answered without a ts");
        this.started.push(res.ts);
        this.open = true;
        this.starting = null;
        await this.changed();
        return res.ts;
      } catch (err) {
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
