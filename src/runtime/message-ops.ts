import { type Fence, openFenceAtEnd } from "./split.js";

/** What the writer tells a platform about one write. */
export interface WriteInfo {
  /**
   * The reply's last write: its last message with its final text (after `finish()` or
   * `fail()`). A platform may attach files to it (Discord), so they come with the answer.
   */
  final: boolean;
  /** A post's idempotency key (see write-keys.ts): the platform stores it with the message. */
  key?: string;
}

/** The two writes a reply needs, implemented per platform. */
export interface MessageOps {
  /**
   * Creates a message and returns its id. Throw `RateLimitedError` only when the platform
   * certainly did not create it (a 429). Any other failure is retried only for a keyed post
   * on a platform that can tell whether the key is there (`find`, `postsDeduped`): a blind
   * retry can post the same message twice.
   */
  post(text: string, write?: WriteInfo): Promise<string>;
  /** Replaces a message's text. Idempotent, so safe to retry. Throw `RateLimitedError` on a 429. */
  edit(id: string, text: string, write?: WriteInfo): Promise<void>;
  /** Optional: deletes a message. Used to take away a status-only placeholder when the answer has no text. */
  remove?(id: string): Promise<void>;
  /**
   * Optional: the message posted with `key`, if the platform has one (Slack's message
   * metadata). Asked before posting a message that may already be there: after a post that
   * failed without saying whether it landed (`failed`: the platform must be asked now), and
   * in a reply taken over from a dead process (`retaken`: what the platform had when the
   * takeover began is enough, since the dead process posts no more).
   */
  find?(key: string, why: "failed" | "retaken"): Promise<string | null>;
  /**
   * The platform itself answers a post whose key it has seen with the message already
   * there (Discord's enforced nonce): a failed keyed post is retried as it is.
   */
  postsDeduped?: boolean;
  /** The write scheduler's buckets each kind of write draws on (see `WritePlan.buckets`). */
  buckets?(kind: "post" | "edit" | "remove"): readonly string[];
}

/**
 * What ends `text` with `message`: the closer of a code block left open, then a blank
 * line, then the message (alone when there is no text).
 */
export function endingFor(text: string, message: string, fence: Fence | null = null): string {
  let extra = "";
  const open = openFenceAtEnd(text, fence);
  if (open) extra += `${text.endsWith("\n") ? "" : "\n"}${open.closer}`;
  const sofar = text + extra;
  if (sofar !== "") extra += sofar.endsWith("\n\n") ? "" : sofar.endsWith("\n") ? "\n" : "\n\n";
  return extra + message;
}

/** Thrown by `MessageOps` on a 429: the writer waits, then writes the latest text. */
export class RateLimitedError extends Error {
  readonly retryAfterMs: number;
  /**
   * The write scheduler's bucket the 429 concerns, when the platform said (Discord's global
   * limit); otherwise the narrowest bucket of the write.
   */
  readonly bucket: string | undefined;

  constructor(retryAfterMs: number, options: { cause?: unknown; bucket?: string } = {}) {
    super(`rate limited: retry after ${retryAfterMs} ms`, { cause: options.cause });
    this.name = "RateLimitedError";
    this.retryAfterMs = Math.max(0, retryAfterMs);
    this.bucket = options.bucket;
  }
}

/**
 * Thrown by `MessageOps.edit` when the message is no longer there (someone deleted it
 * while the answer was written): the writer posts its text again as a new message, since
 * an edit of it can never succeed and the text must not be lost.
 */
export class MessageGoneError extends Error {
  constructor(options: { cause?: unknown } = {}) {
    super("the message to edit was deleted", options);
    this.name = "MessageGoneError";
  }
}
