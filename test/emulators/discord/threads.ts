import type { DiscordEmulator } from "./index.js";
import { Intent } from "./rest.js";
import { snowflake } from "./snowflake.js";
import { type ChannelObject, ChannelType, type StoredMessage, type UserObject } from "./types.js";

/**
 * A person opens a post in the forum: a thread whose first message lives in the thread and
 * has the thread's id, as on Discord (a thread opened from a text channel's message has that
 * message's id too, but the message stays in the channel).
 */
export function forumPost(
  emu: DiscordEmulator,
  o: { title: string; text: string; author?: UserObject; mentionsBot?: boolean },
): { thread: ChannelObject; starter: StoredMessage } {
  const s = emu.state;
  const author = o.author ?? s.alice;
  const id = snowflake();
  const thread = s.addThread(s.forum, o.title, author.id, id);
  emu.dispatch("THREAD_CREATE", { ...thread, newly_created: true }, Intent.Guilds);
  const starter = emu.userMessage(thread.id, o.text, {
    author,
    ...(o.mentionsBot ? { mentionsBot: true } : {}),
    carries: { id },
  });
  return { thread, starter };
}

/**
 * Someone deletes a thread: it is gone with its messages, REST answers its routes with 404
 * Unknown Channel (10003), and the bot gets THREAD_DELETE (discord.js drops it from its cache).
 */
export function deleteThread(emu: DiscordEmulator, id: string): void {
  const s = emu.state;
  const thread = s.channels.get(id);
  if (!thread || thread.type !== ChannelType.PublicThread) throw new Error(`No thread ${id}`);
  s.channels.delete(id);
  s.messages.delete(id);
  emu.dispatch(
    "THREAD_DELETE",
    { id, guild_id: thread.guild_id, parent_id: thread.parent_id, type: thread.type },
    Intent.Guilds,
  );
}

/**
 * A moderator archives a thread (and locks it, with `locked`): the bot's edits and deletes
 * there are refused with 50083 Thread is archived; a message posted reopens it unless it
 * is locked (see permissions.ts). The bot gets THREAD_UPDATE.
 */
export function archiveThread(emu: DiscordEmulator, id: string, o: { locked?: boolean } = {}): void {
  const thread = emu.state.channels.get(id);
  if (!thread?.thread_metadata) throw new Error(`No thread ${id}`);
  thread.thread_metadata.archived = true;
  thread.thread_metadata.locked = o.locked ?? false;
  thread.thread_metadata.archive_timestamp = new Date().toISOString();
  emu.dispatch("THREAD_UPDATE", thread, Intent.Guilds);
}

/**
 * A moderator locks a thread and leaves it open: since Discord's change to locking, only
 * members with Manage Threads may post in it (403 160005 for others, see permissions.ts).
 */
export function lockThread(emu: DiscordEmulator, id: string): void {
  const thread = emu.state.channels.get(id);
  if (!thread?.thread_metadata) throw new Error(`No thread ${id}`);
  thread.thread_metadata.locked = true;
  emu.dispatch("THREAD_UPDATE", thread, Intent.Guilds);
}
