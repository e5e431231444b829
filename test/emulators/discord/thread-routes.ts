import { writeMessage } from "./message-writes.js";
import { managesThreads, missingPermissions, threadArchived } from "./permissions.js";
import { HttpError, Intent, invalidForm, type Reply, type RestContext, tooManyRequests } from "./rest.js";
import { type ChannelObject, ChannelType, type StoredMessage } from "./types.js";

/**
 * Start Thread from Message (`starter`), or without one (a forum post, with its first
 * message): the thread of a message has the message's id, and one per message (160004).
 */
export function startThread(
  ctx: RestContext,
  parentId: string,
  starter: StoredMessage | undefined,
  json: Record<string, unknown>,
): Reply {
  const s = ctx.state;
  const name = typeof json.name === "string" ? json.name : "";
  if (name.length < 1 || name.length > 100) {
    throw invalidForm("name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.");
  }
  if (starter && s.channels.has(starter.id)) {
    throw new HttpError(400, { message: "A thread has already been created for this message", code: 160004 });
  }
  const parent = s.channels.get(parentId);
  if (parent?.type === ChannelType.PublicThread || parent?.type === ChannelType.DM) {
    throw new HttpError(400, { message: "Cannot execute action on this channel type", code: 50024 });
  }
  if (s.botDenied.get(parentId)?.has("CREATE_PUBLIC_THREADS")) throw missingPermissions();
  const path = starter
    ? `/channels/${parentId}/messages/${starter.id}/threads`
    : `/channels/${parentId}/threads`;
  const verdict = ctx.limiter.take(`threads:${parentId}`, "thread", path);
  if (!verdict.ok) return tooManyRequests(verdict.retryAfterMs, verdict.headers, "shared");
  const thread = s.addThread(parentId, name, s.bot.id, starter?.id);
  const body: Record<string, unknown> = { ...thread };
  const first = json.message as Record<string, unknown> | undefined;
  if (!starter && first) {
    // A forum post: the thread opens with its first message.
    const msg = writeMessage(ctx, thread.id, { json: first, files: [], multipart: false }, undefined);
    body.message = s.messageJson(msg);
  }
  ctx.dispatch("THREAD_CREATE", { ...thread, newly_created: true }, Intent.Guilds);
  // The thread limit is hidden: no X-RateLimit-* on success, so clients meet it as a 429.
  return { status: 201, body };
}

/**
 * Modify Channel: a rename (any channel; limited to about 2 per 10 minutes), and for a
 * thread its archiving and lock, with Discord's rules: a thread's creator may archive it,
 * unarchiving one that is not locked takes Send Messages in Threads, and the lock, or
 * anything else, takes Manage Threads. An archived thread takes no change that does not
 * unarchive it (50083).
 */
export function modifyChannel(
  ctx: RestContext,
  channel: ChannelObject,
  json: Record<string, unknown>,
): Reply {
  const s = ctx.state;
  const meta = channel.thread_metadata;
  const archive = typeof json.archived === "boolean" ? json.archived : undefined;
  const lock = typeof json.locked === "boolean" ? json.locked : undefined;
  if (meta?.archived && archive !== false) throw threadArchived();
  if (meta && (archive !== undefined || lock !== undefined)) {
    const moderator = managesThreads(s, channel);
    if (lock !== undefined && lock !== meta.locked && !moderator) throw missingPermissions();
    if (archive === true && channel.owner_id !== s.bot.id && !moderator) throw missingPermissions();
    if (archive === false && meta.archived) {
      const locked = lock ?? meta.locked;
      const sends = !s.botDenied.get(channel.parent_id ?? "")?.has("SEND_MESSAGES_IN_THREADS");
      if (locked ? !moderator : !sends) throw missingPermissions();
    }
  }
  let headers: Record<string, string> | undefined;
  if (typeof json.name === "string") {
    if (json.name.length < 1 || json.name.length > 100) {
      throw invalidForm("name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.");
    }
    const verdict = ctx.limiter.take(`rename:${channel.id}`, "rename", `/channels/${channel.id}`);
    if (!verdict.ok) return tooManyRequests(verdict.retryAfterMs, verdict.headers);
    headers = verdict.headers;
    channel.name = json.name;
    ctx.renames.push({ channelId: channel.id, name: json.name, at: Date.now() });
  }
  if (meta) {
    if (lock !== undefined) meta.locked = lock;
    if (archive !== undefined && archive !== meta.archived) {
      meta.archived = archive;
      meta.archive_timestamp = new Date().toISOString();
    }
  }
  const changed = headers !== undefined || archive !== undefined || lock !== undefined;
  if (changed) {
    const t = channel.type === ChannelType.PublicThread ? "THREAD_UPDATE" : "CHANNEL_UPDATE";
    ctx.dispatch(t, channel, Intent.Guilds);
  }
  return { status: 200, body: channel, ...(headers ? { headers } : {}) };
}

/**
 * Delete Channel: for a thread, Manage Threads, which even its creator needs; its messages
 * go with it, and the bot gets THREAD_DELETE. Other channels take Manage Channels, which
 * the emulated bot never has.
 */
export function deleteChannel(ctx: RestContext, channel: ChannelObject): Reply {
  const s = ctx.state;
  if (channel.type !== ChannelType.PublicThread || !managesThreads(s, channel)) throw missingPermissions();
  s.channels.delete(channel.id);
  s.messages.delete(channel.id);
  ctx.dispatch(
    "THREAD_DELETE",
    { id: channel.id, guild_id: channel.guild_id, parent_id: channel.parent_id, type: channel.type },
    Intent.Guilds,
  );
  return { status: 200, body: channel };
}
