import { DiscordAPIError, type Message, PermissionFlagsBits, type ThreadChannel } from "discord.js";
import { OncePer } from "../../core/once-per.js";
import { log } from "../../log.js";
import { DISCORD_PLACE_REFUSALS } from "../../runtime/write-retry.js";
import { sendDirectly } from "./direct.js";

/** Discord's error codes for a place the bot may not write in. */
const MISSING_ACCESS = 50001;
const MISSING_PERMISSIONS = 50013;
const THREAD_ARCHIVED = 50083;
const THREAD_LOCKED = 160005;

/** The Discord error code behind `err` (the writer wraps what discord.js threw), if any. */
function discordCode(err: unknown): number | string | undefined {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof DiscordAPIError) return e.code;
  }
  return undefined;
}

/** True when `err` is Discord refusing the bot the place, not an outage that will pass. */
export function isRefusal(err: unknown): boolean {
  const code = discordCode(err);
  // The runtime's list, which its retries read too: a person can do something about them.
  return typeof code === "number" && DISCORD_PLACE_REFUSALS.has(code);
}

/** Why the bot could not answer in `channel`, and what to do about it, as the asker reads it. */
export function unwritableSentence(err: unknown, channel: string | undefined): string {
  const where = channel ? `<#${channel}>` : "that conversation";
  switch (discordCode(err)) {
    case MISSING_ACCESS:
      return `I could not answer in ${where}: I cannot see it. Ask a server admin to give me View Channel there, then ask again.`;
    case MISSING_PERMISSIONS:
      return `I could not answer in ${where}: I am missing a permission there (Send Messages, or Send Messages in Threads in a thread). Ask a server admin to grant it, then ask again.`;
    case THREAD_ARCHIVED:
    case THREAD_LOCKED:
      return `I could not answer in ${where}: the thread is archived or locked. Ask me again in a new message.`;
    default:
      return `I could not answer in ${where}: Discord refused my messages there. Please ask again later.`;
  }
}

/**
 * Why Discord refuses the bot a place, and what a server admin can do, as an operator reads
 * it in the log; undefined when `err` is no such refusal. It stays refused until someone
 * acts, so what met it is not tried again.
 */
export function refusalForOperators(err: unknown): string | undefined {
  switch (discordCode(err)) {
    case MISSING_ACCESS:
      return "Discord refuses the bot the channel (50001 Missing Access: the bot was removed from it, or lost View Channel); a server admin can give it back";
    case MISSING_PERMISSIONS:
      return "the bot lacks a permission there (50013 Missing Permissions: Send Messages, or Send Messages in Threads in a thread); a server admin can grant it";
    case THREAD_ARCHIVED:
    case THREAD_LOCKED:
      return "the thread is archived or locked; a moderator can reopen it";
    default:
      return undefined;
  }
}

/**
 * A locked thread takes messages only from members with Manage Threads (Discord's rule
 * since locking no longer archives): without it the bot's answer would be refused with
 * 160005, after a whole model turn. Unknown permissions (an uncached member) are tried.
 */
export function closedToBot(thread: ThreadChannel, botId: string): boolean {
  if (!thread.locked) return false;
  const permissions = thread.permissionsFor(thread.guild.members.me ?? botId);
  return permissions !== null && !permissions.has(PermissionFlagsBits.ManageThreads);
}

/** Why a mention in a locked thread gets no answer, as its author reads it. */
export function lockedSentence(thread: ThreadChannel): string {
  const elsewhere = thread.parentId ? ` Ask me in <#${thread.parentId}> instead.` : "";
  return `I cannot answer in <#${thread.id}>: the thread is locked, and only moderators may write there.${elsewhere}`;
}

/** Who was told about which place: once an hour is enough to act on it. */
const told = new OncePer(60 * 60_000);

/**
 * Whether `user` is to be told about `place` now: in a thread that stays closed to the bot
 * (followed without a mention), every message would otherwise bring its author a DM.
 */
export function firstTellingIn(place: string | undefined, user: string, now = Date.now()): boolean {
  return told.first(`${place ?? ""}:${user}`, now);
}

/**
 * Tells the author of `question` a sentence outside the place that refused the answer: a
 * reply to their message where it is (when the answer was to go to a thread the bot
 * opened under it), else a direct message. A person who takes no DMs is not told.
 */
export async function tellAuthor(
  question: Message,
  refusedIn: string | undefined,
  text: string,
): Promise<void> {
  if (question.channelId !== refusedIn) {
    try {
      await question.reply({ content: text, allowedMentions: { parse: [], repliedUser: true } });
      return;
    } catch (err) {
      log.info({ err, channel: question.channelId }, "could not reply in the channel; sending a DM");
    }
  }
  await sendDirectly(question.author, text);
}
