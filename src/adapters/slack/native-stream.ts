import type { WebClient } from "@slack/web-api";
import { log } from "../../log.js";
import type { ReplyAddress, TextSink } from "../../runtime/contract.js";
import { WriteDropped, type WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { type Fence, openFenceAtEnd, splitMarkdown } from "../../runtime/split.js";
import { endingFor, type StreamWriter } from "../../runtime/stream.js";
import { RenderedText } from "./stable-text.js";
import { AppendCalledOff, StreamBroken, StreamCalls, type StreamPlace } from "./stream-calls.js";

export type { StreamPlace } from "./stream-calls.js";

export interface NativeStreamOptions {
  /** Characters per streamed message; a longer answer continues in a new one (a segment). */
  segmentChars: number;
  /** Slack ends a stream after about this long; a segment gives way to the next at 80% of it. */
  lifetimeMs: number;
  /** Minimum gap between two intermediate appends of one stream; the final one goes at once. */
  intervalMs: number;
}

/** One streamed message: the rendered answer from `start` on, `sent` characters of it out. */
interface Segment {
  ts: string | null;
  start: number;
  /** The code block open at `start`, reopened at the top of this message. */
  fence: Fence | null;
  sent: number;
  startedAt: number;
}

/** Text that may still move to the next segment when a cut is chosen (see `step`). */
const HOLD_BACK = 600;
/** A segment gives way to the next at this share of the stream's lifetime. */
const ROTATE_AT = 0.8;

const reopenOf = (fence: Fence | null) => (fence ? `${fence.opener}\n` : "");
/** What closes `fence` at a cut (the same repair `splitMarkdown` makes). */
const closerAt = (fence: Fence | null, atLineStart: boolean) =>
  fence ? (atLineStart ? fence.closer : `\n${fence.closer} `) : "";

/**
 * Writes a reply with Slack's native text streaming (`chat.startStream`, `appendStream`
 * with `markdown_text` chunks, `stopStream`). Appends are coalesced to one per
 * `intervalMs`. Since appends cannot be taken back, the split into segments is decided
 * before text goes out: while a segment nears its size, the last `HOLD_BACK` characters
 * wait until `splitMarkdown` can place the cut (fences closed and reopened across it); a
 * segment near the stream's lifetime ends at a line break and the next one goes on.
 * A call whose answer was lost counts as sent when Slack shows it applied (see
 * `StreamCalls.send`); any other streaming error hands the rest of the reply, from the
 * last character Slack accepted, to the post + update writer: the answer appears complete
 * and once. Each stream started or stopped, and each message the fallback posts, is
 * reported to `record` (awaited) before the reply goes on.
 */
export class NativeStream implements TextSink {
  private readonly text: RenderedText;
  private seg: Segment = { ts: null, start: 0, fence: null, sent: 0, startedAt: 0 };
  private fallback: StreamWriter | null = null;
  /** How much of the rendered text the fallback writer has been given. */
  private fed = 0;
  private ended = false;
  private complete = false;
  private active = false;
  private dirty = false;
  private loop: Promise<void> = Promise.resolve();
  private lastWrite = Number.NEGATIVE_INFINITY;
  private failed: { error: unknown } | null = null;
  private abandoned = false;
  private done: Promise<void> | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private wake: (() => void) | null = null;
  /** Calls off the intermediate append waiting for its budget: the final one carries its text. */
  private waiting: AbortController | null = null;
  private readonly calls: StreamCalls;

  constructor(
    web: WebClient,
    scheduler: WriteScheduler,
    private readonly place: StreamPlace,
    private readonly opts: NativeStreamOptions,
    render: (markdown: string) => string,
    /**
     * The post + update writer; it reports the messages it posts through `onMessages`, and
     * its first message is the reply's `first` (after the streamed ones: its posts' keys).
     */
    private readonly makeFallback: (onMessages: () => Promise<void>, first: number) => StreamWriter,
    private readonly record: (address: ReplyAddress) => Promise<void> = async () => undefined,
  ) {
    this.text = new RenderedText(render);
    this.calls = new StreamCalls(web, scheduler, place, () => this.report());
  }

  /** Where the reply is: every streamed message, then the fallback's. */
  get address(): ReplyAddress {
    const posted = this.fallback?.messageIds ?? [];
    const starting = this.calls.starting;
    return {
      messages: [...this.calls.started, ...posted],
      streaming: posted.length === 0 && this.calls.open,
      ...(starting === null ? {} : { starting }),
    };
  }

  private async report(): Promise<void> {
    try {
      await this.record(this.address);
    } catch (err) {
      log.warn({ err }, "reply messages not recorded");
    }
  }

  /**
   * Blocks to put under the finished answer with the stream's last stop (no call of its
   * own); set before `finish()`. `closedWith` says whether they went out that way.
   */
  closing: unknown[] | undefined;
  closedWith = false;

  /** The reply's last message and its whole text, once the reply has ended. */
  get lastMessage(): { id: string; text: string } | undefined {
    if (!this.complete) return undefined;
    if (this.fallback) return this.fallback.lastMessage;
    if (!this.seg.ts) return undefined;
    return { id: this.seg.ts, text: reopenOf(this.seg.fence) + this.text.update(true).slice(this.seg.start) };
  }

  /**
   * See `TextSink.broken`: what failed for good here, or in the post + update writer that
   * took over (a stream refused where posts are refused too, such as an archived channel).
   */
  broken(): unknown {
    return this.failed ? this.failed.error : this.fallback?.broken();
  }

  /** True once streaming failed and the post + update writer took over. */
  get fellBack(): boolean {
    return this.fallback !== null;
  }

  write(delta: string): void {
    if (this.ended || delta === "") return;
    this.text.push(delta);
    this.dirty = true;
    this.kick();
  }

  finish(): Promise<void> {
    this.done ??= this.end();
    return this.done;
  }

  fail(message: string): Promise<void> {
    if (!this.done) this.text.push(endingFor(this.text.text, message));
    return this.finish();
  }

  /** See `TextSink.abandon`: the stream is left as it is, for the process that has the reply now. */
  async abandon(): Promise<void> {
    this.abandoned = true;
    this.ended = true;
    this.waiting?.abort();
    this.wake?.();
    await this.fallback?.abandon();
    await this.loop;
  }

  private async end(): Promise<void> {
    this.ended = true;
    // Held behind other threads' final texts, an update would hold this one's back too.
    this.waiting?.abort();
    this.wake?.();
    for (;;) {
      this.kick();
      await this.loop;
      if (this.failed) throw this.failed.error;
      if (this.complete || this.abandoned) return;
    }
  }

  private kick(): void {
    if (this.active || this.failed || this.complete || this.abandoned) return;
    this.active = true;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    try {
      for (;;) {
        await this.pace();
        if (this.abandoned) break;
        this.dirty = false;
        const next = await this.step(this.ended);
        if (next === "done") this.complete = true;
        if (next !== "more") break;
      }
    } catch (error) {
      this.failed = { error };
      log.warn({ err: error }, "streamed reply failed");
    } finally {
      this.active = false;
      // Text that came while the last step was finishing would otherwise wait for the next write.
      if (this.dirty) this.kick();
    }
  }

  /** Waits out the interval since the last append, unless the answer ends first (the final text goes at once). */
  private async pace(): Promise<void> {
    const wait = this.lastWrite + this.opts.intervalMs - Date.now();
    if (wait <= 0 || this.ended) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, wait);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
    this.wake = null;
  }

  private async step(final: boolean): Promise<"more" | "idle" | "done"> {
    const rendered = this.text.update(final);
    if (!this.fallback) {
      try {
        return await this.nativeStep(rendered, final);
      } catch (err) {
        // Nothing went out: the next step, the final one, sends that text with the rest.
        if (err instanceof AppendCalledOff) return "more";
        if (!(err instanceof StreamBroken)) throw err;
        await this.toFallback(rendered, err.cause);
      }
    }
    const writer = this.fallback!;
    writer.write(rendered.slice(this.fed));
    this.fed = rendered.length;
    if (!final) return "idle";
    await writer.finish();
    return "done";
  }

  private async nativeStep(r: string, final: boolean): Promise<"more" | "idle" | "done"> {
    const seg = this.seg;
    const sentAbs = seg.start + seg.sent;
    if (seg.ts && Date.now() - seg.startedAt >= this.opts.lifetimeMs * ROTATE_AT) {
      await this.rotate(r);
      return "more";
    }
    if (sentAbs >= r.length && !final) return "idle";
    const limit = this.opts.segmentChars;
    const reopen = reopenOf(seg.fence);
    const parts = splitMarkdown(r.slice(seg.start), limit, seg.fence);
    if (parts.length <= 1) {
      if (final) {
        const whole = parts[0]?.text ?? reopen;
        await this.send(whole.slice(reopen.length + seg.sent), r.length - sentAbs);
        this.closedWith = await this.stopSegment(undefined, this.closing);
        return "done";
      }
      // Near the end of a segment the cut is not known yet: hold the text back until it is.
      if (reopen.length + r.length - seg.start > limit - Math.min(HOLD_BACK, limit / 4)) return "idle";
      await this.send(r.slice(sentAbs), r.length - sentAbs);
      return "more";
    }
    const cut = this.cut(r);
    await this.send(cut.piece, cut.at - sentAbs);
    await this.stopSegment();
    this.seg = { ts: null, start: cut.at, fence: cut.fence, sent: 0, startedAt: 0 };
    return "more";
  }

  /**
   * Where the current segment ends, at or after what is already out: `splitMarkdown` on
   * the text from the start of the line being streamed, within the room left.
   */
  private cut(r: string): { piece: string; at: number; fence: Fence | null } {
    const seg = this.seg;
    const sentAbs = seg.start + seg.sent;
    const w0 = seg.sent === 0 ? seg.start : Math.max(seg.start, r.lastIndexOf("\n", sentAbs - 1) + 1);
    const fence = openFenceAtEnd(r.slice(seg.start, w0), seg.fence);
    const before = reopenOf(seg.fence).length + (w0 - seg.start);
    const room = Math.max(1, this.opts.segmentChars - before + reopenOf(fence).length);
    const first = splitMarkdown(r.slice(w0), room, fence)[0]!;
    const out = sentAbs - w0;
    if (first.source.length >= out) {
      // A part cut without repairs (no safe cut) carries no reopened fence either.
      const head = first.text === first.source ? 0 : reopenOf(fence).length;
      return {
        piece: first.text.slice(head + out),
        at: w0 + first.source.length,
        fence: first.open,
      };
    }
    // The best cut is in text already out: end the segment right where it is.
    const open = openFenceAtEnd(r.slice(seg.start, sentAbs), seg.fence);
    return { piece: closerAt(open, r[sentAbs - 1] === "\n"), at: sentAbs, fence: open };
  }

  /**
   * Before the stream's lifetime runs out (a timer wakes the writer even when no text
   * comes): end this segment, at the last line break of the text waiting if there is
   * one, and go on in a new one when more text comes.
   */
  private async rotate(r: string): Promise<void> {
    const seg = this.seg;
    const sentAbs = seg.start + seg.sent;
    const nl = r.lastIndexOf("\n");
    let at = nl >= sentAbs ? nl + 1 : sentAbs;
    const shown = reopenOf(seg.fence).length + seg.sent;
    if (shown + at - sentAbs > this.opts.segmentChars - Math.min(HOLD_BACK, this.opts.segmentChars / 4)) {
      at = sentAbs;
    }
    const fence = openFenceAtEnd(r.slice(seg.start, at), seg.fence);
    // Past the lifetime Slack refuses appends: leave that message as it is.
    if (Date.now() - seg.startedAt < this.opts.lifetimeMs) {
      const atLineStart = at === seg.start || r[at - 1] === "\n";
      await this.send(r.slice(sentAbs, at) + closerAt(fence, atLineStart), at - sentAbs);
      await this.stopSegment();
    } else {
      at = sentAbs;
    }
    this.seg = {
      ts: null,
      start: at,
      fence: openFenceAtEnd(r.slice(seg.start, at), seg.fence),
      sent: 0,
      startedAt: 0,
    };
  }

  /** Appends `piece` (starting the segment's stream if needed); `advance` counts rendered text it carries. */
  private async send(piece: string, advance: number): Promise<void> {
    const seg = this.seg;
    if (piece !== "") {
      const starting = seg.ts === null;
      const startedAt = Date.now();
      // Asked at every pick: an append that waited as an update goes as final text once the answer ends.
      const lane =
        starting && this.calls.started.length === 0 ? "first" : () => (this.ended ? "final" : "update");
      // A start never waits (it goes at once or not at all); a final append need not be called off.
      const waiting = starting || this.ended ? null : new AbortController();
      this.waiting = waiting;
      try {
        seg.ts = await this.calls.send(seg.ts, starting ? reopenOf(seg.fence) + piece : piece, lane, {
          since: () => this.lastWrite,
          ...(waiting ? { signal: waiting.signal } : {}),
        });
      } finally {
        if (this.waiting === waiting) this.waiting = null;
      }
      if (starting) {
        seg.startedAt = startedAt;
        this.wakeForRotation();
      }
      this.lastWrite = Date.now();
    }
    seg.sent += advance;
  }

  private wakeForRotation(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.kick();
      },
      this.opts.lifetimeMs * ROTATE_AT + 1,
    );
    this.timer.unref?.();
  }

  /** Ends the segment's stream (see `StreamCalls.stop`); true when `blocks` went with it. */
  private async stopSegment(attempts?: number, blocks?: unknown[]): Promise<boolean> {
    const ts = this.seg.ts;
    if (ts === null) return false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    return this.calls.stop(ts, attempts, blocks);
  }

  /** From here on the post + update writer carries the reply, from the first character not out. */
  private async toFallback(r: string, cause: unknown): Promise<void> {
    const seg = this.seg;
    if (cause instanceof WriteDropped) {
      log.debug({ channel: this.place.channel }, "no budget to stream natively now; posting and updating");
    } else {
      log.warn(
        { err: cause, channel: this.place.channel },
        "native streaming failed; posting and updating instead",
      );
    }
    await this.stopSegment(1);
    const handover = seg.start + seg.sent;
    const fence = openFenceAtEnd(r.slice(seg.start, handover), seg.fence);
    this.fallback = this.makeFallback(() => this.report(), this.calls.started.length);
    this.fallback.write(reopenOf(fence) + r.slice(handover));
    this.fed = r.length;
  }
}
