import { bool, type Params, str } from "./http-util.js";
import {
  BOT_ID,
  BOT_USER_ID,
  type EmuFile,
  type EmuMessage,
  fileJson,
  messageJson,
  TEAM_ID,
} from "./state.js";
import { type ApiContext, fail, type Handler } from "./web-api-context.js";

/** The 3-step external upload: files.getUploadURLExternal, the upload URL, files.completeUploadExternal. */
export class FileApi {
  private fileSeq = 0;

  constructor(private readonly ctx: ApiContext) {}

  handlers(): Record<string, Handler> {
    return {
      "files.getUploadURLExternal": (p) => this.uploadUrl(p),
      "files.completeUploadExternal": (p) => this.completeUpload(p),
      // What a message's stub of a Slack Connect file leaves out (see `messageJson`).
      "files.info": (p) => {
        const file = this.ctx.state.files.get(str(p, "file") ?? "") ?? fail("file_not_found");
        return { file: fileJson(file, this.ctx.hooks.baseUrl()) };
      },
    };
  }

  private uploadUrl(p: Params): Params {
    const filename = str(p, "filename") ?? fail("invalid_arguments");
    const length = Number(str(p, "length") ?? Number.NaN);
    if (!Number.isFinite(length) || length < 0) fail("invalid_arguments");
    if (length > this.ctx.limits().maxFileBytes) fail("file_too_large");
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
    this.ctx.state.files.set(id, file);
    return { upload_url: `${this.ctx.hooks.baseUrl()}/upload/${id}`, file_id: id };
  }

  /** The upload URL's handler: bytes arrive raw or as a multipart part named `body`. */
  receiveUpload(id: string, bytes: Uint8Array): boolean {
    const file = this.ctx.state.files.get(id);
    if (!file) return false;
    file.bytes = bytes;
    file.size = bytes.byteLength;
    return true;
  }

  private completeUpload(p: Params): Params {
    const { state, hooks } = this.ctx;
    const entries = Array.isArray(p.files)
      ? (p.files as { id?: string; title?: string }[])
      : fail("invalid_arguments");
    const files = entries.map((e) => {
      const file = state.files.get(e.id ?? "") ?? fail("file_not_found");
      if (e.title) file.title = e.title;
      return file;
    });
    if (str(p, "channel_id")) {
      const channel = this.ctx.postable(p, "channel_id");
      const thread_ts = this.ctx.threadTs(channel, p);
      for (const f of files) f.shared = true;
      const message = state.addMessage({
        channel,
        thread_ts,
        user: BOT_USER_ID,
        bot_id: BOT_ID,
        subtype: "file_share",
        text: str(p, "initial_comment") ?? "",
        files,
      });
      hooks.echo("posted", message);
    }
    return { files: files.map((f) => fileJson(f, hooks.baseUrl())) };
  }
}

/** conversations.replies / history (cursor pagination), users.info and usergroups.users.list. */
export function readHandlers(ctx: ApiContext): Record<string, Handler> {
  const page = (messages: EmuMessage[], p: Params): Params => {
    const limit = Math.max(1, Math.min(1000, Number(str(p, "limit") ?? 100) || 100));
    const start = Number(str(p, "cursor") ?? 0) || 0;
    const slice = messages.slice(start, start + limit);
    const next = start + limit < messages.length ? String(start + limit) : "";
    return {
      messages: slice.map((m) => messageJson(m, ctx.hooks.baseUrl(), bool(p, "include_all_metadata"))),
      has_more: next !== "",
      response_metadata: { next_cursor: next },
    };
  };
  return {
    "conversations.replies": (p) => {
      const channel = ctx.channel(p);
      const thread = ctx.state.thread(channel, str(p, "ts") ?? fail("invalid_arguments"));
      if (thread.length === 0) fail("thread_not_found");
      return page(thread, p);
    },
    "conversations.history": (p) => page([...ctx.state.history(ctx.channel(p))].reverse(), p),
    // The DM between the bot and one person, opened on first use (the bot has im:write).
    "conversations.open": (p) => {
      const users = (str(p, "users") ?? fail("users_list_not_supplied")).split(",");
      if (users.length !== 1) fail("invalid_arguments");
      const user = ctx.state.users.get(users[0] ?? "") ?? fail("user_not_found");
      if (user.isBot) fail("cannot_dm_bot");
      return { channel: { id: ctx.state.dmChannel(user.id).id } };
    },
    "usergroups.users.list": (p) => {
      const id = str(p, "usergroup") ?? fail("invalid_arguments");
      return { users: ctx.state.userGroups.get(id) ?? fail("no_such_subteam") };
    },
    "users.info": (p) => {
      const id = str(p, "user") ?? fail("user_not_found");
      const user = ctx.state.users.get(id) ?? fail("user_not_found");
      return {
        user: {
          id: user.id,
          team_id: user.team ?? TEAM_ID,
          name: user.name,
          real_name: user.realName,
          is_bot: user.isBot,
          profile: { display_name: user.name, real_name: user.realName, bot_id: user.botId },
        },
      };
    },
  };
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
