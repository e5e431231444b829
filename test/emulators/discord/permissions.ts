import type { ParsedBody } from "./body.js";
import { HttpError, Intent, type RestContext } from "./rest.js";
import type { DiscordState } from "./state.js";
import { type ChannelObject, ChannelType } from "./types.js";

/** Discord's answer to a write the bot's permissions do not allow. */
export const missingPermissions = () => new HttpError(403, { message: "Missing Permissions", code: 50013 });

export const threadArchived = () => new HttpError(400, { message: "Thread is archived", code: 50083 });

/** Discord's answer to a post in a locked thread by someone without Manage Threads. */
export const threadLocked = () => new HttpError(403, { message: "Thread is locked", code: 160005 });

/** The guild channel whose permissions apply: a thread's parent, or the channel itself. */
function permissionsOf(channel: ChannelObject): string {
  return channel.type === ChannelType.PublicThread ? (channel.parent_id ?? "") : channel.id;
}

/**
 * Without View Channel (the bot's role denied it, or the bot was removed from a private
 * channel) every route of the channel and its threads answers 403 Missing Access (50001),
 * reads included, as on Discord.
 */
export function mayView(s: DiscordState, channel: ChannelObject): void {
  if (s.withoutBot.has(channel.id)) throw new HttpError(403, { message: "Missing Access", code: 50001 });
  if (channel.type === ChannelType.DM) return;
  if (s.botDenied.get(permissionsOf(channel))?.has("VIEW_CHANNEL"))
    throw new HttpError(403, { message: "Missing Access", code: 50001 });
}

/**
 * Sending (and typing) needs Send Messages in a channel and Send Messages in Threads in a
 * thread, both read off the guild channel (a thread's parent); DMs need neither.
 */
export function mayWrite(s: DiscordState, channel: ChannelObject): void {
  if (channel.type === ChannelType.DM) return;
  const thread = channel.type === ChannelType.PublicThread;
  const denied = s.botDenied.get(permissionsOf(channel));
  if (denied?.has(thread ? "SEND_MESSAGES_IN_THREADS" : "SEND_MESSAGES")) throw missingPermissions();
}

/**
 * Files take Attach Files and embeds Embed Links, read off the guild channel (a thread's
 * parent) as Send Messages is; DMs need neither. Discord refuses the whole message.
 */
export function mayAttach(s: DiscordState, channel: ChannelObject, body: ParsedBody): void {
  if (channel.type === ChannelType.DM) return;
  const denied = s.botDenied.get(permissionsOf(channel));
  if (body.files.length > 0 && denied?.has("ATTACH_FILES")) throw missingPermissions();
  const embeds = body.json.embeds;
  if (Array.isArray(embeds) && embeds.length > 0 && denied?.has("EMBED_LINKS")) throw missingPermissions();
}

/**
 * The bot's message to a person's DM, as Discord takes it: never to a bot, nor to someone
 * who takes no DMs from the guild's members or blocked the bot (403, 50007); never to
 * someone who shares no guild with it (403, 50278, the code Discord gives that case).
 * Opening the DM channel works in every case: only the message is refused.
 */
export function mayMessage(s: DiscordState, channel: ChannelObject): void {
  const to = channel.type === ChannelType.DM ? channel.recipients?.[0] : undefined;
  if (!to) return;
  if (s.outsiders.has(to.id)) {
    throw new HttpError(403, {
      message: "Cannot send messages to this user due to having no mutual guilds",
      code: 50278,
    });
  }
  if (to.bot || s.dmsClosed.has(to.id)) {
    throw new HttpError(403, { message: "Cannot send messages to this user", code: 50007 });
  }
}

/**
 * Manage Threads (delete, lock, archive others' threads): Switchboard's invite does not ask
 * for it, so the emulated bot has it only once a test grants it (`grantBot`).
 */
export function managesThreads(s: DiscordState, channel: ChannelObject): boolean {
  return (
    s.botGranted.has("MANAGE_THREADS") && !s.botDenied.get(permissionsOf(channel))?.has("MANAGE_THREADS")
  );
}

/**
 * A message posted in an archived thread unarchives it, as on Discord; a locked one only
 * a member with Manage Threads may reopen (50083 for others). Into a locked thread that is
 * still open, only such a member may post at all (160005 for others): Discord's rule since
 * locking stopped being "archived, and only moderators may reopen".
 */
export function reopenToPost(ctx: RestContext, channel: ChannelObject): void {
  const meta = channel.thread_metadata;
  if (!meta) return;
  const moderator = managesThreads(ctx.state, channel);
  if (!meta.archived) {
    if (meta.locked && !moderator) throw threadLocked();
    return;
  }
  if (meta.locked && !moderator) throw threadArchived();
  meta.archived = false;
  meta.archive_timestamp = new Date().toISOString();
  ctx.dispatch("THREAD_UPDATE", channel, Intent.Guilds);
}

/** A message of an archived thread is not edited or deleted (50083): the thread must be reopened first. */
export function mayChange(channel: ChannelObject): void {
  if (channel.thread_metadata?.archived) throw threadArchived();
}
