import { log } from "../log.js";
import type { TextSink } from "./contract.js";
import { PartCursor } from "./fit.js";
import {
  clearStale,
  firstDirty,
  KeyedMessages,
  NO_TEXT,
  repost,
  type Slot,
  slotAt,
  writeKind,
} from "./keyed-messages.js";
import {
  endingFor,
  MessageGoneError,
  type MessageOps,
  RateLimitedError,
  type WriteInfo,
} from "./message-ops.js";
import { readBack } from "./reply-readback.js";
import { type Lane, WriteDropped, WriteScheduler } from "./scheduler/write-scheduler.js";
import { writeSlot } from "./slot-write.js";
import { CONTINUE_AFTER_MS, nap, OWN_BUCKET, type StreamWriterOptions } from "./stream-options.js";
import { WriteRetries } from "./write-retry.js";

export { endingFor, type MessageOps, RateLimitedError, type WriteInfo } from "./message-ops.js";
export type { StreamWriterOptions } from "./stream-options.js";

/**
 * Writes one reply, made of one or more platform messages, as the answer streams in.
 * At most one write is in flight; deltas that arrive meanwhile are coalesced, and each
 * write carries the whole current text of its message. A message that fills up is
 * finalised with its part (its content never changes after that) and the rest goes on in
 * a new message. The final messages' texts, minus fence repairs (see `joinParts`), the
 * table headers repeated (see `splitToFit`) and the status line, concatenate to the text written.
 */
export class StreamWriter implements TextSink {
  private readonly slots: Slot[] = [];
  private text = "";
  /** Where the unfinished message's source starts in `text`, and what is open there. */
  private readonly at = new PartCursor();
  private frozen = 0;
  private statusText = "";
  private ended = false;
  private active = false;
  private loop: Promise<void> = Promise.resolve();
  private lastWrite = Number.NEGATIVE_INFINITY;
  private readonly scheduler: WriteScheduler;
  /** Cancels an intermediate write still waiting for its budget when the answer ends. */
  private waiting: AbortController | null = null;
  /** Ends the wait between intermediate writes early (the answer ended). */
  private wake: (() => void) | null = null;
  private readonly retries = new WriteRetries();
  /** `again`: an outage outlasted the retries of a write that may be repeated (see `fail`). */
  private failed: { error: unknown; again: boolean } | null = null;
  private lastTry = false;
  private failing = false;
  private done: Promise<void> | null = null;
  /** Messages of a resumed reply before the one written on: reported, never written. */
  private readonly earlier: string[];
  /** A resumed reply's text read back, then the `fail()` message waiting for it. */
  private prepared: Promise<void> | null = null;
  private failMessage: string | null = null;
  private resumed = false;
  private abandoned = false;
  /** A retaken reply: messages past the recorded ones may have been posted by the dead process. */
  private retaking = false;
  private readonly keyed: KeyedMessages;

  constructor(
    private readonly ops: MessageOps,
    private readonly opts: StreamWriterOptions,
  ) {
    if (!Number.isInteger(opts.limit) || opts.limit < 1)
      throw new RangeError("limit must be a positive integer");
    this.earlier = opts.resume?.retake === undefined ? (opts.resume?.messages.slice(0, -1) ?? []) : [];
    if (!opts.resume && !opts.ready) this.prepared = Promise.resolve();
    this.scheduler = opts.scheduler ?? new WriteScheduler({ limitOf: () => undefined }, "reply");
    this.keyed = new KeyedMessages(ops, opts.keys, this.earlier.length);
  }

  /** Ids of the messages this reply consists of, in order. */
  get messageIds(): string[] {
    return [...this.earlier, ...this.slots.flatMap((s) => (s.id === null ? [] : [s.id]))];
  }

  /** The reply's last message as last written, if any. */
  get lastMessage(): { id: string; text: string } | undefined {
    const slot = this.slots.findLast((s) => s.id !== null && s.sent !== null);
    return slot ? { id: slot.id!, text: slot.sent! } : undefined;
  }

  /** Appends answer text. Never blocks; clears the status line (the answer replaces it). */
  write(delta: string): void {
    if (this.ended || delta === "") return;
    this.text += delta;
    this.statusText = "";
    this.kick();
  }

  /** Shows `text` (already in the platform's format) under the answer until text or another status replaces it. */
  status(text: string): void {
    if (this.ended) return;
    this.statusText = text;
    if (this.opts.statusLine) this.kick();
  }

  /** Resolves once every message shows its final text; rejects if a write failed for good. */
  finish(): Promise<void> {
    this.done ??= this.end();
    return this.done;
  }

  /** See `TextSink.broken`. */
  broken(): unknown {
    return this.failed?.error;
  }

  /** See `TextSink.abandon`: no write starts after this, and the one in flight is waited for. */
  async abandon(): Promise<void> {
    this.scheduler.cadence.streamEnded(this);
    this.abandoned = true;
    this.ended = true;
    this.waiting?.abort();
    this.wake?.();
    this.retries.stop();
    await this.loop;
  }

  /**
   * Ends the answer with `message` (after closing an open code block), then finishes. After
   * an outage that outlasted the retries, it tries once more with a new budget: the thread
   * is not left mid-sentence without a word. Each message was written whole or not at all,
   * and a post is repeated only under its key, so nothing shows twice.
   */
  fail(message: string): Promise<void> {
    if (this.failed?.again && !this.abandoned) {
      this.lastTry = true;
      this.failed = null;
      this.done = null;
      this.retries.reset();
    }
    if (!this.done && !this.failing) {
      this.failing = true;
      // A resumed reply's ending depends on the text read back: added once it is there.
      this.failMessage = message;
      this.applyFailure();
    }
    return this.finish();
  }

  private applyFailure(): void {
    if (this.failMessage === null || (this.opts.resume && !this.resumed)) return;
    this.text += endingFor(this.text, this.failMessage);
    this.failMessage = null;
  }

  /** Reads back the messages a resumed reply goes on in (once), before anything is laid out. */
  private prepare(): Promise<void> {
    this.prepared ??= (async () => {
      await this.opts.ready;
      const back = await readBack(this.opts.resume);
      this.slots.splice(0, back.slots.length, ...back.slots);
      this.text = back.prefix + this.text;
      this.retaking = back.retaking;
      if (back.rerecord) await this.report();
      this.resumed = true;
      this.applyFailure();
    })();
    return this.prepared;
  }

  private async end(): Promise<void> {
    this.scheduler.cadence.streamEnded(this);
    this.ended = true;
    this.statusText = "";
    // The final text goes at once: an update waiting for its turn or its interval is not worth waiting for.
    this.waiting?.abort();
    this.wake?.();
    let leftovers = true;
    for (;;) {
      this.kick();
      await this.loop;
      if (this.failed) throw this.failed.error;
      if (this.abandoned) return;
      // Known once the reply is prepared: the first pass of the loop did that.
      if (leftovers && this.retaking) {
        leftovers = false;
        if (await this.keyed.claimLeftovers(this.slots)) continue;
      }
      this.layout();
      if (firstDirty(this.slots) < 0) return;
    }
  }

  private kick(): void {
    if (this.active || this.failed || this.abandoned) return;
    this.active = true;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    try {
      await this.prepare();
      for (;;) {
        // Nothing left to write: stop now rather than after another interval (a finished
        // answer would otherwise hold its thread for one more edit interval); the next
        // write() starts the loop again, still paced from the last write.
        this.layout();
        if (this.abandoned || firstDirty(this.slots) < 0) break;
        if (this.retries.waiting) {
          await this.retries.wait();
          continue;
        }
        if (!this.ended) this.scheduler.cadence.streaming(this);
        if (this.lane() === "update") {
          await this.pace();
          this.layout();
          if (this.abandoned || firstDirty(this.slots) < 0) break;
        }
        if (this.ended) this.continueIfEditsWait();
        const waiting = this.ended ? null : new AbortController();
        this.waiting = waiting;
        try {
          await this.scheduler.run({
            lane: () => this.lane(),
            buckets: () => this.nextBuckets(),
            since: () => this.lastWrite,
            requeue: false,
            what: "reply write",
            ...(waiting ? { signal: waiting.signal } : {}),
            run: () => this.writeNext(),
          });
        } catch (error) {
          // A 429 paused the budget, or the answer ended while an update waited: decide again.
          if (!(error instanceof RateLimitedError) && !(error instanceof WriteDropped)) throw error;
          if (error instanceof RateLimitedError) {
            log.debug({ retryAfterMs: error.retryAfterMs }, "reply write rate limited");
          }
        } finally {
          if (this.waiting === waiting) this.waiting = null;
        }
      }
    } catch (error) {
      this.scheduler.cadence.streamEnded(this);
      this.failed = { error, again: this.retries.mayRepeat(error) && !this.lastTry };
      log.warn({ err: error }, "reply write failed");
    } finally {
      this.active = false;
    }
  }

  /** A reply nobody sees yet writes "first", an ended answer "final", the rest updates that may wait. */
  private lane(): Lane {
    const shown = this.opts.shownAlready;
    if (
      !(typeof shown === "function" ? shown() : shown) &&
      !this.slots.some((s) => s.id !== null) &&
      this.earlier.length === 0
    ) {
      return "first";
    }
    return this.ended ? "final" : "update";
  }

  /**
   * Waits out the reply's interval since its last write (longer under a crowd: see the
   * scheduler's `cadence`), unless the answer ends first.
   */
  private async pace(): Promise<void> {
    const wait = this.lastWrite + this.scheduler.cadence.editInterval(this.opts.intervalMs) - Date.now();
    if (wait <= 0 || this.ended) return;
    const { done, wake } = nap(wait);
    this.wake = wake;
    await done;
    this.wake = null;
  }

  /** The buckets of the write that would go next (without a new layout: this runs at every pick). */
  private nextBuckets(): readonly string[] {
    const index = firstDirty(this.slots);
    const slot = this.slots[index >= 0 ? index : this.frozen];
    return this.ops.buckets?.(writeKind(slot)) ?? OWN_BUCKET;
  }

  /**
   * When the answer's last message can only be finished by an edit whose budget is spent
   * for a while (Slack's workspace-wide chat.update), the rest goes out in a new message
   * whose budget has room (both asked at one `now`: a post sharing the edits' budget never waits less).
   */
  private continueIfEditsWait(now = Date.now()): void {
    this.layout();
    const slot = this.slots[this.frozen];
    if (!this.ops.buckets || !slot || slot.id === null || slot.want === slot.sent) return;
    if (slot.sent === null || !slot.sentClean || slot.sentEnd === undefined) return;
    if (slot.sentEnd <= this.at.base || slot.sentEnd >= this.text.length) return;
    const edits = this.scheduler.waitFor(this.ops.buckets("edit"), "final", now);
    if (edits <= CONTINUE_AFTER_MS) return;
    if (this.scheduler.waitFor(this.ops.buckets("post"), "final", now) >= edits) return;
    // It ends where it reads whole (see `layout`): the new message starts there.
    slot.want = slot.sent;
    this.frozen += 1;
    this.at.moveTo(this.text, slot.sentEnd);
    log.debug({ waitMs: edits }, "edits are spent for now: the answer goes on in a new message");
    this.layout();
  }

  /** The write the scheduler granted: the latest text of the first message that needs one. */
  private async writeNext(): Promise<void> {
    // A write granted after `abandon()` (a final one cannot be cancelled while it waits)
    // must not land over what the process that took the reply over has written.
    if (this.abandoned) return;
    this.layout();
    const index = firstDirty(this.slots);
    if (index < 0) return;
    this.lastWrite = Date.now();
    await this.attempt(this.slots[index]!);
  }

  /** One write of a slot's latest text. Throws a 429 for the scheduler, and when the reply cannot go on. */
  private async attempt(slot: Slot): Promise<void> {
    const write: WriteInfo = { final: this.ended && slot === this.slots.at(-1) };
    try {
      const how = await writeSlot(this.ops, this.keyed, this.slots, slot, write, () => this.report());
      if (how === "adopted") return;
      this.retries.reset();
      if (how === "changed") await this.report();
    } catch (error) {
      if (error instanceof RateLimitedError) throw error;
      if (error instanceof MessageGoneError && slot.id !== null) {
        repost(slot);
        await this.report();
        return;
      }
      // A post that may have landed goes again only under a key the platform can be asked about.
      const post = slot.id === null;
      if (!this.retries.failed(error, post && !this.keyed.canRetryPost(this.slots.indexOf(slot))))
        throw error;
      // The post may have landed before it failed: its key says so before it is sent again.
      if (post) slot.unsure = "failed";
      log.debug({ err: error, post }, "reply write failed, retrying");
    }
  }

  /** A record that failed must not end the answer: the user still gets it, and the log says why. */
  private async report(): Promise<void> {
    try {
      await this.opts.onMessages?.(this.messageIds);
    } catch (err) {
      log.warn({ err }, "reply messages not recorded");
    }
  }

  /** Brings every slot's `want` up to date with the text, freezing the parts that are full. */
  private layout(): void {
    const render = this.opts.render ?? ((md: string) => md);
    const parts = this.at.parts(this.text, this.opts.limit, this.opts.render);
    for (const part of parts.slice(0, -1)) {
      const text = render(part.text);
      this.at.pass(part);
      if (text.trim() === "") continue;
      slotAt(this.slots, this.frozen, this.retaking).want = text;
      this.frozen++;
    }
    // While the answer streams, its last message shows it up to where it reads whole (see continuation.ts).
    const held = this.ended ? null : this.at.readablePart(this.text, this.opts.limit, this.opts.render);
    const last = held ?? parts.at(-1);
    const rendered = last ? render(last.text) : "";
    // Whitespace alone is no text: both platforms refuse a message posted or edited to it
    // (Discord's 50006, Slack's no_text). A part of it gets no message (the next part takes
    // its place); an answer of it ends as an empty one does, and meanwhile shows what it showed.
    let body = rendered.trim() === "" ? "" : rendered;
    const status = this.opts.statusLine && !this.ended ? this.statusText : "";
    if (status) {
      const withStatus = body ? `${body}\n\n${status}` : status;
      // The status is a courtesy: it never pushes the answer into another message.
      if (withStatus.length <= this.opts.limit) body = withStatus;
    }
    const current = this.slots[this.frozen];
    if (body !== "") {
      const slot = slotAt(this.slots, this.frozen, this.retaking);
      slot.want = body;
      slot.wantEnd = held ? this.at.base + held.source.length : this.text.length;
      slot.wantClean = body === rendered;
    } else if (this.ended && current) current.want = this.ops.remove || current.sent === null ? "" : NO_TEXT;
    if (this.ended) clearStale(this.slots.slice(this.frozen), Boolean(this.ops.remove));
  }
}
