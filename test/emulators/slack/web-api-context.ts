import { type Params, str } from "./http-util.js";
import { BOT_USER_ID, type EmuMessage, type SlackState } from "./state.js";

export interface WebApiLimits {
  /** chat.postMessage `text` (Slack truncates past 40,000; the emulator refuses instead). */
  postTextChars: number;
  /** chat.update `text`: Slack reportedly answers msg_too_long for long updates; 4,000 chosen. */
  updateTextChars: number;
  /** `markdown_text` on any method (Slack documents 12,000); also the size of one streamed message. */
  markdownChars: number;
  blocksPerMessage: number;
  /** Native stream lifetime (Slack: ~5 min, then message_not_in_streaming_state). */
  streamLifetimeMs: number;
  /** Bytes per uploaded file. */
  maxFileBytes: number;
}

export const DEFAULT_LIMITS: WebApiLimits = {
  postTextChars: 40_000,
  updateTextChars: 4_000,
  markdownChars: 12_000,
  blocksPerMessage: 50,
  streamLifetimeMs: 5 * 60_000,
  maxFileBytes: 1024 * 1024 * 1024,
};

export interface WebApiHooks {
  baseUrl(): string;
  socketUrl(): string;
  /** How long a trigger_id can open a view (Slack: 3 s). */
  triggerTtlMs(): number;
  /** A change the bot made that Slack would echo as a `message` event. */
  echo(kind: "posted" | "changed" | "deleted", message: EmuMessage, previous?: EmuMessage): void;
}

/** A Slack `ok:false` answer; `extra` joins `error` in the body (e.g. `response_metadata`). */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly extra: Params = {},
  ) {
    super(message);
  }
}

export const fail = (error: string, extra?: Params): never => {
  throw new ApiError(error, extra);
};

export type Handler = (p: Params) => Params;

/** What every group of handlers shares: the state, the limits, and Slack's common checks. */
export class ApiContext {
  constructor(
    readonly state: SlackState,
    readonly hooks: WebApiHooks,
    readonly limits: () => WebApiLimits,
  ) {}

  channel(p: Params, key = "channel"): string {
    const id = str(p, key) ?? fail("channel_not_found");
    if (!this.state.channels.has(id)) fail("channel_not_found");
    return id;
  }

  /**
   * A channel the bot may post in: a DM (an assistant thread is one), or a channel it was
   * invited to. Elsewhere Slack answers not_in_channel, and a private channel the bot is
   * not in is one it cannot see (the bot has chat:write, not chat:write.public).
   */
  postable(p: Params, key = "channel"): string {
    const id = this.channel(p, key);
    const channel = this.state.channels.get(id)!;
    if (!this.state.isMember(channel, BOT_USER_ID))
      fail(channel.kind === "group" ? "channel_not_found" : "not_in_channel");
    return id;
  }

  /** A message the bot wrote, named by `channel` and `ts`. */
  own(p: Params): EmuMessage {
    const channel = this.channel(p);
    const message = this.state.find(channel, str(p, "ts") ?? "") ?? fail("message_not_found");
    if (message.user !== BOT_USER_ID) fail("cant_update_message");
    return message;
  }

  /** Text, blocks and markdown_text, validated with Slack's rules for `textLimit`. */
  content(p: Params, textLimit: number): { text: string; markdown: boolean; blocks?: unknown[] } {
    const markdown = str(p, "markdown_text");
    const text = str(p, "text");
    const blocks = Array.isArray(p.blocks) ? p.blocks : undefined;
    // A message of whitespace alone shows nothing: Slack answers no_text, on an update as on a post.
    const blank = (t: string | undefined) => t === undefined || t.trim() === "";
    if (markdown !== undefined) {
      if (text !== undefined || blocks) fail("markdown_text_conflict");
      if (blank(markdown)) fail("no_text");
      if (markdown.length > this.limits().markdownChars) fail("msg_too_long");
      return { text: markdown, markdown: true };
    }
    if (blank(text) && !blocks?.length) fail("no_text");
    if (text !== undefined && text.length > textLimit) fail("msg_too_long");
    if (blocks && blocks.length > this.limits().blocksPerMessage) fail("invalid_blocks");
    if (blocks) checkBlocks(blocks);
    return { text: text ?? "", markdown: false, blocks };
  }

  /**
   * `metadata` as Slack takes it: an object (or its JSON) with a non-empty `event_type` and
   * an object `event_payload`; anything else is refused, never stored half-right.
   */
  metadata(p: Params): EmuMessage["metadata"] | undefined {
    if (p.metadata === undefined) return undefined;
    const m = p.metadata;
    if (!m || typeof m !== "object" || Array.isArray(m)) return fail("invalid_metadata_format");
    const { event_type, event_payload } = m as { event_type?: unknown; event_payload?: unknown };
    if (typeof event_type !== "string" || event_type === "") return fail("invalid_metadata_schema");
    if (!event_payload || typeof event_payload !== "object" || Array.isArray(event_payload))
      return fail("invalid_metadata_schema");
    return { event_type, event_payload: event_payload as Record<string, unknown> };
  }

  threadTs(channel: string, p: Params): string | undefined {
    const ts = str(p, "thread_ts");
    if (ts === undefined || ts === "") return undefined;
    // Real Slack would post at top level; refusing makes a wrong thread_ts visible in tests.
    if (!this.state.find(channel, ts)) fail("thread_not_found");
    return ts;
  }
}

/** Slack's cumulative limit on the text of `markdown` blocks in one message. */
const MARKDOWN_BLOCK_CHARS = 12_000;

const isPlainText = (t: unknown, max: number) =>
  !!t &&
  typeof t === "object" &&
  (t as { type?: unknown }).type === "plain_text" &&
  typeof (t as { text?: unknown }).text === "string" &&
  (t as { text: string }).text.length > 0 &&
  (t as { text: string }).text.length <= max;

/**
 * The rules of the blocks Switchboard's answers carry, as Block Kit documents them:
 * `markdown` (text, 12,000 characters in all per message), `context_actions` (1 to 5
 * `feedback_buttons` or `icon_button` elements) and `feedback_buttons` (a positive and a
 * negative button, each with plain text and a value; action ids of at most 255). A block
 * that breaks them is refused with `invalid_blocks`, as Slack does.
 */
export function checkBlocks(blocks: unknown[]): void {
  let markdown = 0;
  for (const b of blocks) {
    const block = b as { type?: unknown; text?: unknown; elements?: unknown };
    if (block.type === "markdown") {
      if (typeof block.text !== "string" || block.text === "") fail("invalid_blocks");
      markdown += (block.text as string).length;
      if (markdown > MARKDOWN_BLOCK_CHARS) fail("invalid_blocks");
    } else if (block.type === "context_actions") {
      const elements = block.elements;
      if (!Array.isArray(elements) || elements.length < 1 || elements.length > 5) fail("invalid_blocks");
      for (const e of elements as Array<Record<string, unknown>>) {
        if (e.type === "icon_button") continue;
        if (e.type !== "feedback_buttons") fail("invalid_blocks");
        if (typeof e.action_id === "string" && e.action_id.length > 255) fail("invalid_blocks");
        for (const side of ["positive_button", "negative_button"]) {
          const button = e[side] as { text?: unknown; value?: unknown } | undefined;
          if (
            !button ||
            !isPlainText(button.text, 75) ||
            typeof button.value !== "string" ||
            button.value === ""
          )
            fail("invalid_blocks");
        }
      }
    } else {
      // Elsewhere feedback buttons are refused: they live in context_actions only.
      if (JSON.stringify(b).includes('"feedback_buttons"')) fail("invalid_blocks");
    }
  }
}
