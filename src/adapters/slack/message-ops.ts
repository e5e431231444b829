import { ErrorCode, type WebClient } from "@slack/web-api";
import { log } from "../../log.js";
import { interactionId } from "../../runtime/interaction-ids.js";
import { MessageGoneError } from "../../runtime/message-ops.js";
import { type MessageOps, RateLimitedError } from "../../runtime/stream.js";
import { findPosted, replyMetadata, type ThreadSnapshot } from "./resume.js";
import { slackBuckets } from "./write-policy.js";

/*
 * A Slack reply's messages as the shared writer uses them (post, update, delete, find by
 * key), and the blocks written beside them.
 */

/** A WebClient error as the writer understands it: a 429 becomes `RateLimitedError`. */
export function asWriteError(err: unknown): unknown {
  const e = err as { code?: string; retryAfter?: number };
  if (e?.code === ErrorCode.RateLimitedError) {
    return new RateLimitedError((e.retryAfter ?? 1) * 1000, { cause: err });
  }
  // An admin deleted the message while the answer was written.
  if (
    e?.code === ErrorCode.PlatformError &&
    (err as { data?: { error?: string } }).data?.error === "message_not_found"
  )
    return new MessageGoneError({ cause: err });
  return err;
}

/**
 * Blocks a reply's final write carries under its text (the rating buttons): asked for at
 * that write, told once a write has shown them.
 */
export interface ClosingBlocks {
  blocks(): unknown[] | undefined;
  shown(): void;
}

/**
 * A message's text as `markdown_text`, or, when blocks go under it, in a `markdown` block
 * beside them (a message written with `markdown_text` cannot carry blocks), the same text
 * as its notification (the whole message, well under Slack's 40,000 characters).
 */
export function messageBody(text: string, closing: unknown[] | undefined) {
  if (!closing) return { markdown_text: text };
  return { text, blocks: [{ type: "markdown", text }, ...closing] };
}

/**
 * A write of the reply's text with `closing`'s blocks when it carries them. Should Slack
 * refuse it (an error it answered, such as `invalid_blocks`: nothing was written), the
 * text goes again without them: the buttons are worth less than the answer, which must
 * never be lost for them.
 */
async function withClosing<T>(
  closing: ClosingBlocks | undefined,
  final: boolean | undefined,
  write: (blocks: unknown[] | undefined) => Promise<T>,
): Promise<T> {
  const blocks = final ? closing?.blocks() : undefined;
  if (!blocks) return write(undefined);
  try {
    const result = await write(blocks);
    closing?.shown();
    return result;
  } catch (err) {
    if ((err as { code?: string })?.code !== ErrorCode.PlatformError) throw err;
    log.warn(
      { error: (err as { data?: { error?: string } }).data?.error },
      "Slack refused the answer's last write with its rating buttons; writing its text without them",
    );
    return write(undefined);
  }
}

/**
 * `reads`: the client that looks up a keyed message (one that retries); `web` when not
 * given. `taken`: the thread as a takeover found it, for the lookups of a retaken reply.
 * `closing`: what the reply's final write carries under its text.
 */
export function slackMessageOps(
  web: WebClient,
  place: { channel: string; threadTs: string },
  reads: WebClient = web,
  taken?: ThreadSnapshot,
  closing?: ClosingBlocks,
): MessageOps {
  const buckets = {
    post: slackBuckets("chat.postMessage", { channel: place.channel }),
    edit: slackBuckets("chat.update", { channel: place.channel }),
    remove: slackBuckets("chat.delete", { channel: place.channel }),
  };
  return {
    buckets: (kind) => buckets[kind],
    async post(text, write) {
      try {
        const res = await withClosing(closing, write?.final, (blocks) =>
          web.chat.postMessage({
            channel: place.channel,
            thread_ts: place.threadTs,
            ...messageBody(text, blocks),
            ...(write?.key ? { metadata: replyMetadata(write.key) } : {}),
          }),
        );
        return res.ts ?? "";
      } catch (err) {
        throw asWriteError(err);
      }
    },
    find: (key, why) =>
      why === "retaken" && taken ? taken.posted(key) : findPosted(reads, place.channel, place.threadTs, key),
    async edit(ts, text, write) {
      try {
        await withClosing(closing, write?.final, (blocks) =>
          web.chat.update({ channel: place.channel, ts, ...messageBody(text, blocks) }),
        );
      } catch (err) {
        throw asWriteError(err);
      }
    },
    async remove(ts) {
      try {
        await web.chat.delete({ channel: place.channel, ts });
      } catch (err) {
        throw asWriteError(err);
      }
    },
  };
}

/** Slack's feedback buttons (block kit `feedback_buttons` in `context_actions`), carrying `ref`. */
export function feedbackBlock(ref: string) {
  const button = (emoji: string, value: string, label: string) => ({
    text: { type: "plain_text" as const, text: emoji },
    value,
    accessibility_label: label,
  });
  return {
    type: "context_actions" as const,
    elements: [
      {
        type: "feedback_buttons" as const,
        action_id: interactionId(ref),
        positive_button: button("👍", "good", "Mark this answer as helpful"),
        negative_button: button("👎", "bad", "Mark this answer as not helpful"),
      },
    ],
  };
}
