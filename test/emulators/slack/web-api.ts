import { type Params, str } from "./http-util.js";
import type { RateLimiter } from "./rate-limit.js";
import {
  BOT_ID,
  BOT_USER_ID,
  type EmuFile,
  type EmuMessage,
  fileJson,
  messageJson,
  type SlackState,
  TEAM_ID,
} from "./state.js";

export interface WebApiLimits {
  /** chat.postMessage `text` (Slack truncates past 40,000; the emulator refuses instead). */
  postTextChars: number;
  /** chat.update `text`: PLATFORMS.md reports msg_too_long for long updates; 4,000 chosen. */
  updateTextChars: number;
  /** `markdown_text` on any method (Slack documents 12,000). */
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

export interface ApiResult {
  status: number;
  body: Params;
  headers?: Record<string, string>;
}

export interface WebApiHooks {
  baseUrl(): string;
  socketUrl(): string;
  /** A change the bot made that Slack would echo as a `message` event. */
  echo(kind: "posted" | "changed" | "deleted", message: EmuMessage, previous?: EmuMessage): void;
}

export interface WebApiCall {
  method: string;
  params: Params;
  at: number;
  ok: boolean;
  error?: string;
}

class ApiError extends Error {}
const fail = (error: string): never => {
  throw new ApiError(error);
};

type Handler = (p: Params) => Params;

export class WebApi {
  limits: WebApiLimits = { ...DEFAULT_LIMITS };
  botToken = "xoxb-emulator";
  appToken = "xapp-emulator";
  /** Every call, in order, for tests and benchmarks. */
  readonly calls: WebApiCall[] = [];
  private fileSeq = 0;
  private readonly handlers: Record<string, Handler>;

  constructor(
    private readonly state: SlackState,
    private readonly rates: RateLimiter,
    private readonly hooks: WebApiHooks,
  ) {
    this.handlers = {
      "auth.test": () => ({
        url: "https://emulator.slack.com/",
        team: "Emulator",
        user: "switchboard",
        team_id: TEAM_ID,
        user_id: BOT_USER_ID,
        bot_id: BOT_ID,
        is_enterprise_install: false,
      }),
      "chat.postMessage": (p) => this.postMessage(p),
      "chat.update": (p) => this.update(p),
      "chat.delete": (p) => this.remove(p),
      "chat.postEphemeral": (p) => this.postEphemeral(p),
      "chat.startStream": (p) => this.startStream(p),
      "chat.appendStream": (p) => this.appendStream(p),
      "chat.stopStream": (p) => this.stopStream(p),
      "assistant.threads.setStatus": (p) => this.assistant(p, "status"),
      "assistant.threads.setTitle": (p) => this.assistant(p, "title"),
      "assistant.threads.setSuggestedPrompts": (p) => this.assistant(p, "prompts"),
      "files.getUploadURLExternal": (p) => this.uploadUrl(p),
      "files.completeUploadExternal": (p) => this.completeUpload(p),
      "reactions.add": (p) => this.react(p, true),
      "reactions.remove": (p) => this.react(p, false),
      "conversations.replies": (p) => this.replies(p),
      "conversations.history": (p) => this.historyOf(p),
      "users.info": (p) => this.userInfo(p),
    };
  }

  handle(method: string, params: Params, token: string | undefined): ApiResult {
    const call: WebApiCall = { method, params, at: Date.now(), ok: false };
    this.calls.push(call);
    const expected = method === "apps.connections.open" ? this.appToken : this.botToken;
    if (!token) return this.error(call, "not_authed");
    if (token !== expected) return this.error(call, "invalid_auth");
    if (method === "apps.connections.open") {
      call.ok = true;
      return { status: 200, body: { ok: true, url: this.hooks.socketUrl() } };
    }
    const handler = this.handlers[method];
    if (!handler) return this.error(call, "unknown_method");
    const decision = this.rates.check(method, str(params, "channel") ?? str(params, "channel_id"));
    if (decision.limited) {
      call.error = "ratelimited";
      return {
        status: 429,
        body: { ok: false, error: "ratelimited" },
        headers: { "retry-after": String(decision.retryAfter) },
      };
    }
    try {
      const body = handler(params);
      call.ok = true;
      return { status: 200, body: { ok: true, ...body } };
    } catch (err) {
      if (err instanceof ApiError) return this.error(call, err.message);
      throw err;
    }
  }

  private error(call: WebApiCall, error: string): ApiResult {
    call.error = error;
    return { status: 200, body: { ok: false, error } };
  }

  private channel(p: Params, key = "channel"): string {
    const id = str(p, key) ?? fail("channel_not_found");
    if (!this.state.channels.has(id)) fail("channel_not_found");
    return id;
  }

  private own(p: Params): EmuMessage {
    const channel = this.channel(p);
    const message = this.state.find(channel, str(p, "ts") ?? "") ?? fail("message_not_found");
    if (message.user !== BOT_USER_ID) fail("cant_update_message");
    return message;
  }

  /** Text, blocks and markdown_text, validated with Slack's rules for `textLimit`. */
  private content(p: Params, textLimit: number): { text: string; markdown: boolean; blocks?: unknown[] } {
    const markdown = str(p, "markdown_text");
    const text = str(p, "text");
    const blocks = Array.isArray(p.blocks) ? p.blocks : undefined;
    if (markdown !== undefined) {
      if (text !== undefined || blocks) fail("markdown_text_conflict");
      if (markdown.length > this.limits.markdownChars) fail("msg_too_long");
      return { text: markdown, markdown: true };
    }
    if (text === undefined && !blocks) fail("no_text");
    if (text !== undefined && text.length > textLimit) fail("msg_too_long");
    if (blocks && blocks.length > this.limits.blocksPerMessage) fail("invalid_blocks");
    return { text: text ?? "", markdown: false, blocks };
  }

  private threadTs(channel: string, p: Params): string | undefined {
    const ts = str(p, "thread_ts");
    if (ts === undefined || ts === "") return undefined;
    // Real Slack would post at top level; refusing makes a wrong thread_ts visible in tests.
    if (!this.state.find(channel, ts)) fail("thread_not_found");
    return ts;
  }

  private postMessage(p: Params): Params {
    const channel = this.channel(p);
    const thread_ts = this.threadTs(channel, p);
    const content = this.content(p, this.limits.postTextChars);
    const message = this.state.addMessage({
      channel,
      thread_ts,
      user: BOT_USER_ID,
      bot_id: BOT_ID,
      ...content,
    });
    this.hooks.echo("posted", message);
    return { channel, ts: message.ts, message: messageJson(message, this.hooks.baseUrl()) };
  }

  private update(p: Params): Params {
    const message = this.own(p);
    if (message.stream?.state === "streaming") fail("cant_update_message");
    const content = this.content(p, this.limits.updateTextChars);
    const previous = { ...message };
    message.edits.push({ text: message.text, blocks: message.blocks, at: Date.now() });
    Object.assign(message, content);
    this.hooks.echo("changed", message, previous);
    return { channel: message.channel, ts: message.ts, text: message.text };
  }

  private remove(p: Params): Params {
    const message = this.own(p);
    message.deleted = true;
    this.hooks.echo("deleted", message);
    return { channel: message.channel, ts: message.ts };
  }

  private postEphemeral(p: Params): Params {
    const channel = this.channel(p);
    const user = str(p, "user") ?? fail("user_not_found");
    const content = this.content(p, this.limits.postTextChars);
    const thread_ts = str(p, "thread_ts");
    this.state.ephemerals.push({
      channel,
      user,
      text: content.text,
      blocks: content.blocks,
      thread_ts,
      via: "chat.postEphemeral",
    });
    return { message_ts: this.state.clock.next() };
  }

  private chunksText(p: Params): { text: string; chunks: unknown[] } {
    const chunks = Array.isArray(p.chunks) ? [...p.chunks] : [];
    const markdown = str(p, "markdown_text");
    if (markdown !== undefined) chunks.unshift({ type: "markdown_text", text: markdown });
    let text = "";
    for (const c of chunks) {
      if (c && typeof c === "object" && (c as Params).type === "markdown_text") {
        text += String((c as Params).text ?? "");
      }
    }
    return { text, chunks };
  }

  private startStream(p: Params): Params {
    const channel = this.channel(p);
    const thread_ts = this.threadTs(channel, p) ?? fail("invalid_arguments");
    const isDm = this.state.channels.get(channel)?.kind === "im";
    if (!isDm && (!str(p, "recipient_user_id") || !str(p, "recipient_team_id"))) {
      fail("missing_recipient_user_id");
    }
    const { text, chunks } = this.chunksText(p);
    if (text.length > this.limits.markdownChars) fail("msg_too_long");
    const message = this.state.addMessage({
      channel,
      thread_ts,
      user: BOT_USER_ID,
      bot_id: BOT_ID,
      text,
      markdown: true,
      stream: { state: "streaming", startedAt: Date.now(), chunks },
    });
    this.hooks.echo("posted", message);
    return { channel, ts: message.ts };
  }

  private streaming(p: Params): EmuMessage {
    const message = this.own(p);
    const s = message.stream;
    if (s?.state !== "streaming") fail("message_not_in_streaming_state");
    if (s && Date.now() - s.startedAt > this.limits.streamLifetimeMs) {
      s.state = "stopped";
      fail("message_not_in_streaming_state");
    }
    return message;
  }

  private appendTo(message: EmuMessage, p: Params): void {
    const { text, chunks } = this.chunksText(p);
    if (message.text.length + text.length > this.limits.markdownChars) fail("msg_too_long");
    message.edits.push({ text: message.text, at: Date.now() });
    message.text += text;
    message.stream?.chunks.push(...chunks);
  }

  private appendStream(p: Params): Params {
    const message = this.streaming(p);
    if (!str(p, "markdown_text") && !Array.isArray(p.chunks)) fail("invalid_arguments");
    this.appendTo(message, p);
    return { channel: message.channel, ts: message.ts };
  }

  private stopStream(p: Params): Params {
    const message = this.streaming(p);
    this.appendTo(message, p);
    if (Array.isArray(p.blocks)) message.blocks = p.blocks;
    if (message.stream) message.stream.state = "stopped";
    this.hooks.echo("changed", message);
    return { channel: message.channel, ts: message.ts, message: messageJson(message, this.hooks.baseUrl()) };
  }

  private assistant(p: Params, what: "status" | "title" | "prompts"): Params {
    const channel = this.channel(p, "channel_id");
    const threadTs = str(p, "thread_ts") ?? fail("invalid_arguments");
    if (!this.state.find(channel, threadTs)) fail("thread_not_found");
    const thread = this.state.assistantThread(channel, threadTs);
    if (what === "status") thread.statuses.push(str(p, "status") ?? fail("invalid_arguments"));
    if (what === "title") thread.titles.push(str(p, "title") ?? fail("invalid_arguments"));
    if (what === "prompts") {
      const prompts = Array.isArray(p.prompts) ? (p.prompts as { title: string; message: string }[]) : [];
      if (prompts.length === 0 || prompts.length > 4) fail("invalid_arguments");
      thread.prompts.push({ title: str(p, "title"), prompts });
    }
    return {};
  }

  private uploadUrl(p: Params): Params {
    const filename = str(p, "filename") ?? fail("invalid_arguments");
    const length = Number(str(p, "length") ?? Number.NaN);
    if (!Number.isFinite(length) || length < 0) fail("invalid_arguments");
    if (length > this.limits.maxFileBytes) fail("file_too_large");
    this.fileSeq += 1;
    const id = `F${String(this.fileSeq).padStart(6, "0")}`;
    const file: EmuFile = {
      id,
      name: filename,
      title: filename,
      mimetype: mimeOf(filename),
      size: length,
      bytes: new Uint8Array(),
      shared: false,
    };
    this.state.files.set(id, file);
    return { upload_url: `${this.hooks.baseUrl()}/upload/${id}`, file_id: id };
  }

  /** The upload URL's handler: bytes arrive raw or as a multipart part named `body`. */
  receiveUpload(id: string, bytes: Uint8Array): boolean {
    const file = this.state.files.get(id);
    if (!file) return false;
    file.bytes = bytes;
    file.size = bytes.byteLength;
    return true;
  }

  private completeUpload(p: Params): Params {
    const entries = Array.isArray(p.files)
      ? (p.files as { id?: string; title?: string }[])
      : fail("invalid_arguments");
    const files = entries.map((e) => {
      const file = this.state.files.get(e.id ?? "") ?? fail("file_not_found");
      if (e.title) file.title = e.title;
      return file;
    });
    const channelId = str(p, "channel_id");
    if (channelId) {
      const channel = this.channel(p, "channel_id");
      const thread_ts = this.threadTs(channel, p);
      for (const f of files) f.shared = true;
      const message = this.state.addMessage({
        channel,
        thread_ts,
        user: BOT_USER_ID,
        bot_id: BOT_ID,
        subtype: "file_share",
        text: str(p, "initial_comment") ?? "",
        files,
      });
      this.hooks.echo("posted", message);
    }
    return { files: files.map((f) => fileJson(f, this.hooks.baseUrl())) };
  }

  private react(p: Params, add: boolean): Params {
    const channel = this.channel(p);
    const message = this.state.find(channel, str(p, "timestamp") ?? "") ?? fail("message_not_found");
    const name = str(p, "name") ?? fail("invalid_name");
    const users = message.reactions.get(name) ?? new Set<string>();
    if (add && users.has(BOT_USER_ID)) fail("already_reacted");
    if (!add && !users.has(BOT_USER_ID)) fail("no_reaction");
    if (add) users.add(BOT_USER_ID);
    else users.delete(BOT_USER_ID);
    if (users.size) message.reactions.set(name, users);
    else message.reactions.delete(name);
    return {};
  }

  private page(messages: EmuMessage[], p: Params): Params {
    const limit = Math.max(1, Math.min(1000, Number(str(p, "limit") ?? 100) || 100));
    const start = Number(str(p, "cursor") ?? 0) || 0;
    const slice = messages.slice(start, start + limit);
    const next = start + limit < messages.length ? String(start + limit) : "";
    return {
      messages: slice.map((m) => messageJson(m, this.hooks.baseUrl())),
      has_more: next !== "",
      response_metadata: { next_cursor: next },
    };
  }

  private replies(p: Params): Params {
    const channel = this.channel(p);
    const ts = str(p, "ts") ?? fail("invalid_arguments");
    const thread = this.state.thread(channel, ts);
    if (thread.length === 0) fail("thread_not_found");
    return this.page(thread, p);
  }

  private historyOf(p: Params): Params {
    const channel = this.channel(p);
    return this.page([...this.state.history(channel)].reverse(), p);
  }

  private userInfo(p: Params): Params {
    const id = str(p, "user") ?? fail("user_not_found");
    const user = this.state.users.get(id) ?? fail("user_not_found");
    return {
      user: {
        id: user.id,
        team_id: TEAM_ID,
        name: user.name,
        real_name: user.realName,
        is_bot: user.isBot,
        profile: { display_name: user.name, real_name: user.realName, bot_id: user.botId },
      },
    };
  }
}

function mimeOf(filename: string): string {
  const ext = filename.split(".").pop()?.toLowerCase() ?? "";
  const map: Record<string, string> = {
    png: "image/png",
    jpg: "image/jpeg",
    jpeg: "image/jpeg",
    gif: "image/gif",
    txt: "text/plain",
    md: "text/markdown",
    json: "application/json",
    csv: "text/csv",
    pdf: "application/pdf",
  };
  return map[ext] ?? "application/octet-stream";
}
