import type { DiscordEmulator } from "./index.js";
import { Intent } from "./rest.js";
import { snowflake } from "./snowflake.js";
import type { ChannelObject, StoredMessage, UserObject } from "./types.js";

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
