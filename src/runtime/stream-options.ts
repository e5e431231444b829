import type { WriteScheduler } from "./scheduler/write-scheduler.js";

/** How a `StreamWriter` writes one reply (see stream.ts). */
export interface StreamWriterOptions {
  /** Maximum characters per message, after `render` (Slack ~3,900, Discord 2,000). */
  limit: number;
  /** Minimum gap between two intermediate writes of this reply; first and final writes go at once. */
  intervalMs: number;
  /**
   * The platform connection's write scheduler, shared by every reply. Without one the
   * writer has its own, which only waits out the 429s it meets.
   */
  scheduler?: WriteScheduler;
  /**
   * The person already sees the reply begin (a thread the bot opened for it): its first
   * message is then an ordinary update, not the first visible write. Asked once `ready`.
   */
  shownAlready?: boolean | (() => boolean);
  /** Resolves when the place can take writes (a thread being opened); nothing is written before. */
  ready?: Promise<unknown>;
  /** Turns one part's Markdown into the platform's format (e.g. Slack mrkdwn) before it is written. */
  render?: (markdown: string) => string;
  /** Show `status()` text as a line under the answer while streaming (removed at the end). */
  statusLine?: boolean;
  /**
   * Goes on with a reply written earlier, maybe by another process: `messages` are its
   * messages, and the last one is written on. What it shows, read back with `shown` before
   * the first write (null: the message is gone, so a new one is posted), stays in front
   * of the new text, in the platform's format already.
   */
  resume?: {
    messages: string[];
    shown(id: string): Promise<string | null>;
    /**
     * Set when the turn is taken over after its process died: the answer's text up to its
     * last checkpoint (Markdown). Every message is laid out again from it, so what the
     * cut-off step had shown is replaced by the step run again, not repeated after it.
     * `shown` is still asked for the last message (null: it is gone, so it is posted).
     */
    retake?: string;
    /**
     * A retake's message the dead process may have posted and not recorded, with no key to
     * find it by (a Slack native stream's start): looked up once, it joins the recorded ones.
     */
    unrecorded?: () => Promise<string | null>;
  };
  /**
   * The idempotency key of the reply's n-th message (see write-keys.ts), sent with its
   * post: with it a failed post is retried and a taken-over reply finds the messages the
   * dead process posted but never recorded, rather than posting them again.
   */
  keys?: (index: number) => string;
  /**
   * Told the reply's message ids each time a message is posted or removed, and awaited
   * before the next write, so a record of them is never behind the platform.
   */
  onMessages?: (ids: string[]) => Promise<void>;
}

// The writer's fixed settings.

/**
 * Attempts of a write the platform refused with a 4xx other than a refusal of the place (see
 * write-retry.ts). Edits are idempotent; an unkeyed post gets one attempt whatever failed.
 */
export const EDIT_ATTEMPTS = 3;
/**
 * How long an outage (5xx, network errors, timeouts) is ridden out before the reply gives
 * up: a minute covers a platform's short incidents and restarts, and the answer coalesces
 * meanwhile. The waits between tries double from the first to the longest.
 */
export const RETRY_BUDGET_MS = 60_000;
export const RETRY_FIRST_MS = 1_000;
export const RETRY_LONGEST_MS = 10_000;
/**
 * An answer's final edit that would wait longer than this for its budget (Slack's
 * workspace-wide chat.update, spent) goes out as a continuation message instead.
 */
export const CONTINUE_AFTER_MS = 1_000;
/** The bucket of a writer without a platform's buckets: its own 429s pause only itself. */
export const OWN_BUCKET = ["reply"];

/**
 * A sleep that `wake()` ends early: a plain timer, not node:timers/promises, since the
 * writer's tests drive it with fake timers.
 */
export function nap(ms: number): { done: Promise<void>; wake: () => void } {
  let wake = () => {};
  const done = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    wake = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  return { done, wake };
}
