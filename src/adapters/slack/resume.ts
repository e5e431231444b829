import type { WebClient } from "@slack/web-api";
import { log } from "../../log.js";
import { retryAfterMs } from "./retry-after.js";

/** Pages of `conversations.replies` read to find one message of a thread. */
const PAGES = 10;
const PAGE_SIZE = 200;
/** 429s on `chat.stopStream` waited out during recovery, so the note lands within seconds. */
const STOP_ATTEMPTS = 2;
const MAX_STOP_WAIT_MS = 3_000;

interface ReadMessage {
  ts?: string;
  text?: string;
  bot_id?: string;
  files?: unknown[];
  blocks?: { type?: string; text?: unknown; accessory?: unknown }[];
  metadata?: { event_type?: string; event_payload?: Record<string, unknown> };
}

/** The `event_type` of the metadata a reply's messages carry their idempotency key in. */
export const REPLY_METADATA = "switchboard_reply";

/** The metadata that names a reply's message by its idempotency key. */
export function replyMetadata(key: string) {
  return { event_type: REPLY_METADATA, event_payload: { key } };
}

/**
 * A message's text as Slack has it now, for writing on after it; null when it is gone.
 * A message written with `markdown_text` may come back as a `markdown` block: its text is
 * the Markdown as written (UNVERIFIED how Slack returns it; the emulator returns `text`).
 * `text` is entity-escaped in Slack's answers, so `&amp;`, `&lt;` and `&gt;` are undone.
 */
export async function readShown(
  web: WebClient,
  channel: string,
  threadTs: string,
  ts: string,
): Promise<string | null> {
  // oldest/latest narrow the page to the message where Slack applies them to replies.
  const found = await findInThread(web, channel, threadTs, (m) => m.ts === ts, {
    oldest: ts,
    latest: ts,
    inclusive: true,
  });
  return found ? textOf(found) : null;
}

/**
 * The thread's messages as Slack has them now, with their metadata: what a reply taken
 * over reads once, for the text its last message shows and for the messages the dead
 * process posted under its keys (one `conversations.replies` call for a thread of up to
 * 200 messages: thirty takeovers at once stay inside its Tier 3 budget).
 */
export class ThreadSnapshot {
  private read: Promise<ReadMessage[]> | undefined;

  constructor(
    private readonly web: WebClient,
    private readonly channel: string,
    private readonly threadTs: string,
  ) {}

  /** A message's text, for writing on after it; null when it is gone. */
  async shown(ts: string): Promise<string | null> {
    const found = (await this.messages()).find((m) => m.ts === ts);
    return found ? textOf(found) : null;
  }

  /** The ts of the message posted with idempotency key `key`, or null. */
  async posted(key: string): Promise<string | null> {
    return (await this.messages()).find((m) => hasKey(m, key))?.ts ?? null;
  }

  /**
   * The message a process began with no key (a native stream's start) and died before it
   * knew its ts: the bot's message posted since `since` (ms) and after every message the
   * record names, that is not among them, carries no reply key and is not an upload or a
   * prompt with buttons. Only one such can be it: with more, or none, or a thread that
   * cannot be read, null (the reply then posts anew, as it would have without this).
   */
  async unrecorded(botId: string, since: number, named: readonly string[]): Promise<string | null> {
    const after = Math.max(since, ...named.map(tsMillis));
    const messages = await this.messages().catch((err: unknown) => {
      log.warn({ err }, "the thread was not read for a message its stopped process began");
      return [];
    });
    const found = messages.filter(
      (m) =>
        m.ts !== undefined &&
        m.bot_id === botId &&
        tsMillis(m.ts) >= after &&
        !named.includes(m.ts) &&
        m.metadata?.event_type !== REPLY_METADATA &&
        !m.files?.length &&
        !m.blocks?.some((b) => b.type === "actions" || b.type === "input" || b.accessory !== undefined),
    );
    if (found.length > 1)
      log.warn(
        { found: found.length },
        "more than one message could be the one a stopped process began; taking none",
      );
    return found.length === 1 ? found[0]!.ts! : null;
  }

  private messages(): Promise<ReadMessage[]> {
    this.read ??= allInThread(this.web, this.channel, this.threadTs);
    return this.read;
  }
}

/** A Slack ts ("1712345678.000200": seconds and microseconds) as ms since the epoch. */
const tsMillis = (ts: string) => Number(ts) * 1000;

const hasKey = (m: ReadMessage, key: string) =>
  m.metadata?.event_type === REPLY_METADATA && m.metadata.event_payload?.key === key;

async function allInThread(web: WebClient, channel: string, threadTs: string): Promise<ReadMessage[]> {
  const all: ReadMessage[] = [];
  await findInThread(
    web,
    channel,
    threadTs,
    (m) => {
      all.push(m);
      return false;
    },
    { include_all_metadata: true },
  );
  return all;
}

/** The ts of the thread's message posted with idempotency key `key`, or null. */
export async function findPosted(
  web: WebClient,
  channel: string,
  threadTs: string,
  key: string,
): Promise<string | null> {
  const found = await findInThread(web, channel, threadTs, (m) => hasKey(m, key), {
    include_all_metadata: true,
  });
  return found?.ts ?? null;
}

async function findInThread(
  web: WebClient,
  channel: string,
  threadTs: string,
  match: (m: ReadMessage) => boolean,
  narrow: { oldest?: string; latest?: string; inclusive?: boolean; include_all_metadata?: boolean },
): Promise<ReadMessage | undefined> {
  let cursor: string | undefined;
  for (let page = 0; page < PAGES; page++) {
    const res = await web.conversations.replies({
      channel,
      ts: threadTs,
      ...narrow,
      limit: PAGE_SIZE,
      ...(cursor ? { cursor } : {}),
    });
    const found = (res.messages as ReadMessage[] | undefined)?.find(match);
    if (found) return found;
    cursor = res.response_metadata?.next_cursor || undefined;
    if (!cursor) return undefined;
  }
  return undefined;
}

function textOf(m: ReadMessage): string {
  const markdown = m.blocks?.filter((b) => b.type === "markdown" && typeof b.text === "string");
  if (markdown?.length) return markdown.map((b) => b.text as string).join("\n\n");
  return (m.text ?? "").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

/**
 * Stops a native stream, adding `text` at its end if given. False when Slack would not
 * stop it (no longer streaming, past its lifetime, or refused): then it takes `chat.update`.
 */
export async function stopStream(
  web: WebClient,
  channel: string,
  ts: string,
  text?: string,
): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    try {
      await web.chat.stopStream({
        channel,
        ts,
        ...(text ? { chunks: [{ type: "markdown_text" as const, text }] } : {}),
      });
      return true;
    } catch (err) {
      const wait = retryAfterMs(err);
      if (wait === null || attempt >= STOP_ATTEMPTS || wait > MAX_STOP_WAIT_MS) {
        log.debug({ err, ts }, "stream not stopped; editing the message instead");
        return false;
      }
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
