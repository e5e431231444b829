import { type Params, str } from "./http-util.js";
import { BOT_ID, BOT_USER_ID, type EmuMessage, messageJson } from "./state.js";
import { type ApiContext, checkBlocks, fail, type Handler } from "./web-api-context.js";

const CHUNK_TYPES = new Set(["markdown_text", "task_update", "plan_update", "blocks"]);

/** The chunks of a stream call (`markdown_text` folded in as the first), validated; and their text. */
function chunksOf(p: Params): { text: string; chunks: Params[] } {
  if (p.chunks !== undefined && !Array.isArray(p.chunks)) fail("invalid_chunks");
  const chunks = [...((p.chunks as unknown[] | undefined) ?? [])];
  const markdown = str(p, "markdown_text");
  if (markdown !== undefined) chunks.unshift({ type: "markdown_text", text: markdown });
  let text = "";
  for (const c of chunks) {
    if (!c || typeof c !== "object") fail("invalid_chunks");
    const chunk = c as Params;
    if (!CHUNK_TYPES.has(String(chunk.type))) fail("invalid_chunks");
    if (chunk.type === "markdown_text") {
      if (typeof chunk.text !== "string") fail("invalid_chunks");
      text += chunk.text;
    }
    if (chunk.type === "task_update" && (!str(chunk, "id") || !str(chunk, "title"))) fail("invalid_chunks");
  }
  return { text, chunks: chunks as Params[] };
}

/**
 * chat.startStream / appendStream / stopStream with the rules a streaming bot meets:
 * recipients required outside DMs, appends only while the message streams (never after
 * the stop, never after the stream's lifetime: `message_not_in_streaming_state`; never in an
 * archived channel: `is_archived`), and a size limit per streamed message (`msg_too_long`).
 * A refused call changes nothing.
 */
export function streamHandlers(ctx: ApiContext): Record<string, Handler> {
  const { state, hooks } = ctx;

  const streaming = (p: Params): EmuMessage => {
    const message = ctx.own(p);
    ctx.unarchived(message.channel);
    const s = message.stream;
    if (s?.state !== "streaming") fail("message_not_in_streaming_state");
    if (s && Date.now() - s.startedAt > ctx.limits().streamLifetimeMs) {
      s.state = "expired";
      fail("message_not_in_streaming_state");
    }
    return message;
  };

  const appendTo = (message: EmuMessage, p: Params): void => {
    const { text, chunks } = chunksOf(p);
    if (message.text.length + text.length > ctx.limits().markdownChars) fail("msg_too_long");
    if (chunks.length === 0) return;
    message.edits.push({ text: message.text, at: Date.now() });
    message.text += text;
    message.stream?.chunks.push(...chunks);
  };

  const startStream = (p: Params): Params => {
    const channel = ctx.postable(p);
    const thread_ts = ctx.threadTs(channel, p) ?? fail("invalid_arguments");
    if (state.channels.get(channel)?.kind !== "im") {
      if (!str(p, "recipient_user_id")) fail("missing_recipient_user_id");
      if (!str(p, "recipient_team_id")) fail("missing_recipient_team_id");
    }
    const { text, chunks } = chunksOf(p);
    if (text.length > ctx.limits().markdownChars) fail("msg_too_long");
    const message = state.addMessage({
      channel,
      thread_ts,
      user: BOT_USER_ID,
      bot_id: BOT_ID,
      text,
      markdown: true,
      stream: { state: "streaming", startedAt: Date.now(), chunks },
    });
    hooks.echo("posted", message);
    return { channel, ts: message.ts };
  };

  const appendStream = (p: Params): Params => {
    const message = streaming(p);
    if (str(p, "markdown_text") === undefined && !Array.isArray(p.chunks)) fail("invalid_arguments");
    appendTo(message, p);
    return { channel: message.channel, ts: message.ts };
  };

  const stopStream = (p: Params): Params => {
    const message = streaming(p);
    appendTo(message, p);
    if (Array.isArray(p.blocks)) {
      // stopStream takes up to 50 blocks, as any message.
      checkBlocks(p.blocks, ctx.limits().blocksPerMessage);
      message.blocks = p.blocks;
    }
    if (message.stream) message.stream.state = "stopped";
    hooks.echo("changed", message);
    return { channel: message.channel, ts: message.ts, message: messageJson(message, hooks.baseUrl()) };
  };

  return {
    "chat.startStream": startStream,
    "chat.appendStream": appendStream,
    "chat.stopStream": stopStream,
  };
}
