import { log } from "../log.js";
import type { TextSink } from "./contract.js";
import { type Fence, type MessagePart, openFenceAtEnd, splitMarkdown } from "./split.js";

/** The two writes a reply needs, implemented per platform. */
export interface MessageOps {
  /**
   * Creates a message and returns its id. Throw `RateLimitedError` only when the platform
   * certainly did not create it (a 429): any other failure is not retried, since a blind
   * retry can post the same message twice.
   */
  post(text: string): Promise<string>;
  /** Replaces a message's text. Idempotent, so safe to retry. Throw `RateLimitedError` on a 429. */
  edit(id: string, text: string): Promise<void>;
  /** Optional: deletes a message. Used to take away a status-only placeholder when the answer has no text. */
  remove?(id: string): Promise<void>;
}

export interface StreamWriterOptions {
  /** Maximum characters per message, after `render` (Slack ~3,900, Discord 2,000). */
  limit: number;
  /** Minimum gap between two writes of this reply. */
  intervalMs: number;
  /** Shared by all replies of one workspace (Slack) or channel (Discord). */
  budget?: RateBudget;
  /** Turns one part's Markdown into the platform's format (e.g. Slack mrkdwn) before it is written. */
  render?: (markdown: string) => string;
  /** Show `status()` text as a line under the answer while streaming (removed at the end). */
  statusLine?: boolean;
}

/** Thrown by `MessageOps` on a 429: the writer waits, then writes the latest text. */
export class RateLimitedError extends Error {
  readonly retryAfterMs: number;

  constructor(retryAfterMs: number, options: { cause?: unknown } = {}) {
    super(`rate limited: retry after ${retryAfterMs} ms`, options);
    this.name = "RateLimitedError";
    this.retryAfterMs = Math.max(0, retryAfterMs);
  }
}

/**
 * A token bucket shared by every reply that draws on the same platform quota (Slack
 * `chat.update` is Tier 3, ~50/min per workspace; Discord allows ~5 writes per 5 s per
 * channel). Waiters are served first come, first served.
 */
export class RateBudget {
  private readonly capacity: number;
  private readonly perMs: number;
  private tokens: number;
  private stamp = Date.now();
  private pausedUntil = 0;
  private readonly waiters: (() => void)[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(opts: { capacity: number; refillPerSec: number }) {
    if (!(opts.capacity >= 1) || !(opts.refillPerSec > 0)) {
      throw new RangeError("RateBudget needs capacity >= 1 and refillPerSec > 0");
    }
    this.capacity = opts.capacity;
    this.perMs = opts.refillPerSec / 1000;
    this.tokens = opts.capacity;
  }

  /** Resolves when a write may go out. */
  take(): Promise<void> {
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      this.serve();
    });
  }

  /** After a 429 with Retry-After: nobody sharing this budget writes for `ms`. */
  pause(ms: number): void {
    this.refill();
    // The platform says the quota is spent: start refilling from empty.
    this.tokens = 0;
    this.pausedUntil = Math.max(this.pausedUntil, Date.now() + ms);
  }

  private refill(): void {
    const now = Date.now();
    this.tokens = Math.min(this.capacity, this.tokens + (now - this.stamp) * this.perMs);
    this.stamp = now;
  }

  private serve(): void {
    this.refill();
    const now = Date.now();
    // The tolerance absorbs floating-point drift in the refill arithmetic.
    while (this.waiters.length > 0 && now >= this.pausedUntil && this.tokens >= 1 - 1e-9) {
      this.tokens -= 1;
      this.waiters.shift()!();
    }
    if (this.waiters.length === 0 || this.timer) return;
    const wait = Math.max(this.pausedUntil - now, Math.ceil((1 - this.tokens) / this.perMs), 1);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.serve();
    }, wait);
  }
}

/** What a placeholder becomes when the answer has no text and `MessageOps.remove` is missing. */
const NO_TEXT = "Done.";
/** Attempts per edit on errors other than 429 (edits are idempotent; posts get one). */
const EDIT_ATTEMPTS = 3;
const EDIT_RETRY_MS = 1_000;

interface Slot {
  id: string | null;
  /** The text the message should show now; "" means "remove it". */
  want: string;
  /** The text last written successfully. */
  sent: string | null;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Writes one reply, made of one or more platform messages, as the answer streams in.
 * At most one write is in flight; deltas that arrive meanwhile are coalesced, and each
 * write carries the whole current text of its message. A message that fills up is
 * finalised with its part (its content never changes after that) and the rest goes on in
 * a new message. The final messages' texts, minus fence repairs (see `joinParts`) and
 * the status line, concatenate to the text written.
 */
export class StreamWriter implements TextSink {
  private readonly slots: Slot[] = [];
  private text = "";
  /** Where the unfinished message's source starts in `text`, and the fence open there. */
  private base = 0;
  private baseFence: Fence | null = null;
  private frozen = 0;
  private statusText = "";
  private ended = false;
  private active = false;
  private loop: Promise<void> = Promise.resolve();
  private lastWrite = Number.NEGATIVE_INFINITY;
  private editFailures = 0;
  private failed: { error: unknown } | null = null;
  private done: Promise<void> | null = null;

  constructor(
    private readonly ops: MessageOps,
    private readonly opts: StreamWriterOptions,
  ) {
    if (!Number.isInteger(opts.limit) || opts.limit < 1)
      throw new RangeError("limit must be a positive integer");
  }

  /** Ids of the messages this reply consists of, in order. */
  get messageIds(): string[] {
    return this.slots.flatMap((s) => (s.id === null ? [] : [s.id]));
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

  /** Ends the answer with `message` (after closing an open code block), then finishes. */
  fail(message: string): Promise<void> {
    if (!this.done) {
      let text = this.text;
      const fence = openFenceAtEnd(text);
      if (fence) text += `${text.endsWith("\n") ? "" : "\n"}${fence.closer}`;
      if (text !== "") text += text.endsWith("\n\n") ? "" : text.endsWith("\n") ? "\n" : "\n\n";
      this.text = text + message;
    }
    return this.finish();
  }

  private async end(): Promise<void> {
    this.ended = true;
    this.statusText = "";
    for (;;) {
      this.kick();
      await this.loop;
      if (this.failed) throw this.failed.error;
      this.layout();
      if (this.nextDirty() < 0) return;
    }
  }

  private kick(): void {
    if (this.active || this.failed) return;
    this.active = true;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    try {
      for (;;) {
        await sleep(Math.max(0, this.lastWrite + this.opts.intervalMs - Date.now()));
        this.layout();
        if (this.nextDirty() < 0) break;
        if (this.opts.budget) await this.opts.budget.take();
        // Deltas kept coming while we waited: write the latest state.
        this.layout();
        const index = this.nextDirty();
        if (index < 0) break;
        this.lastWrite = Date.now();
        await this.attempt(this.slots[index]!);
      }
    } catch (error) {
      this.failed = { error };
      log.warn({ err: error }, "reply write failed");
    } finally {
      this.active = false;
    }
  }

  /** One write of a slot's latest text. Throws only when the reply cannot go on. */
  private async attempt(slot: Slot): Promise<void> {
    const text = slot.want;
    try {
      if (slot.id === null) {
        if (text !== "") slot.id = await this.ops.post(text);
      } else if (text === "") {
        await this.ops.remove?.(slot.id);
        slot.id = null;
      } else {
        await this.ops.edit(slot.id, text);
      }
      slot.sent = text;
      this.editFailures = 0;
    } catch (error) {
      if (error instanceof RateLimitedError) {
        log.debug({ retryAfterMs: error.retryAfterMs }, "reply write rate limited");
        if (this.opts.budget) this.opts.budget.pause(error.retryAfterMs);
        else await sleep(error.retryAfterMs);
        return;
      }
      if (slot.id === null || ++this.editFailures >= EDIT_ATTEMPTS) throw error;
      log.debug({ err: error, attempt: this.editFailures }, "reply edit failed, retrying");
      await sleep(EDIT_RETRY_MS * this.editFailures);
    }
  }

  private nextDirty(): number {
    return this.slots.findIndex((s) => s.want !== s.sent);
  }

  /** Brings every slot's `want` up to date with the text, freezing the parts that are full. */
  private layout(): void {
    const render = this.opts.render ?? ((md: string) => md);
    const parts = this.split(this.text.slice(this.base), this.baseFence);
    for (const part of parts.slice(0, -1)) {
      this.slot(this.frozen).want = render(part.text);
      this.base += part.source.length;
      this.baseFence = part.open;
      this.frozen++;
    }
    const last = parts.at(-1);
    let body = last ? render(last.text) : "";
    const status = this.opts.statusLine && !this.ended ? this.statusText : "";
    if (status) {
      const withStatus = body ? `${body}\n\n${status}` : status;
      // The status is a courtesy: it never pushes the answer into another message.
      if (withStatus.length <= this.opts.limit) body = withStatus;
    }
    const current = this.slots[this.frozen];
    if (body !== "") this.slot(this.frozen).want = body;
    else if (this.ended && current) current.want = this.ops.remove || current.sent === null ? "" : NO_TEXT;
  }

  private slot(index: number): Slot {
    let slot = this.slots[index];
    if (!slot) {
      slot = { id: null, want: "", sent: null };
      this.slots[index] = slot;
    }
    return slot;
  }

  /** `splitMarkdown`, made to fit after `render` (which may lengthen text, e.g. escapes). */
  private split(markdown: string, from: Fence | null): MessagePart[] {
    const render = this.opts.render;
    const out: MessagePart[] = [];
    let rest = markdown;
    let fence = from;
    let limit = this.opts.limit;
    while (rest !== "") {
      const parts = splitMarkdown(rest, limit, fence);
      const first = parts[0]!;
      const over = render ? render(first.text).length - this.opts.limit : 0;
      if (over > 0 && limit > 1) {
        limit = Math.max(1, limit - over);
        continue;
      }
      out.push(first);
      if (parts.length === 1) break;
      rest = rest.slice(first.source.length);
      fence = first.open;
      limit = this.opts.limit;
    }
    return out;
  }
}
