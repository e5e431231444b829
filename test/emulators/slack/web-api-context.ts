import { type Params, str } from "./http-util.js";
import { messageBlockProblems } from "./message-blocks.js";
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
   * A channel the bot may post in: its DM with a person (an assistant thread is one), or a
   * channel it was invited to and that is not archived. Elsewhere Slack answers
   * not_in_channel, and a private channel or a DM between other people is one the bot
   * cannot see at all (it has chat:write, not chat:write.public): channel_not_found.
   */
  postable(p: Params, key = "channel"): string {
    const id = this.channel(p, key);
    const channel = this.state.channels.get(id)!;
    if (!this.state.isMember(channel, BOT_USER_ID))
      fail(channel.kind === "channel" ? "not_in_channel" : "channel_not_found");
    if (channel.archived) fail("is_archived");
    return id;
  }

  /**
   * Refuses a write to what is already there (an update, an append to a stream, a reaction)
   * in an archived channel, as Slack does: its history stays as it was.
   */
  unarchived(channel: string): void {
    if (this.state.channels.get(channel)?.archived) fail("is_archived");
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
    if (blocks) checkBlocks(blocks, this.limits().blocksPerMessage);
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

/** A message's blocks as Slack checks them: any problem is `invalid_blocks`, each named in `response_metadata`. */
export function checkBlocks(blocks: unknown[], maxBlocks: number): void {
  const problems = messageBlockProblems(blocks, maxBlocks);
  if (problems.length > 0)
    fail("invalid_blocks", { errors: problems, response_metadata: { messages: problems } });
}
