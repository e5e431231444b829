import { type Message, MessageType, type SendableChannels, type ThreadChannel } from "discord.js";
import type { InboundFile, PriorMessage } from "../../core/inbound.js";
import type { ThreadKey } from "../../core/thread.js";
import { log } from "../../log.js";
import { REFUSED_NOTE } from "../../runtime/access.js";
import type { Inbound } from "../../runtime/contract.js";
import {
  configuredChannel,
  type DiscordContext,
  dmKey,
  guildKey,
  provenanceOf,
  provisionalName,
} from "./context.js";
import { inboundFiles } from "./files.js";
import { openThread } from "./open-thread.js";
import { channelAnswerPlace, channelPlace, openingPlace } from "./places.js";
import { NOTHING_ASKED_ON_DISCORD, repliedTo } from "./replies.js";
import { DiscordReply, type Place } from "./reply.js";
import { closedToBot, firstTellingIn, lockedSentence, tellAuthor } from "./unwritable.js";

/** Earlier thread messages read when the bot is mentioned mid-thread (the dispatcher trims to its budget). */
const HISTORY_LIMIT = 100;

/**
 * The message text with the bot's mention removed and other mentions as @names. The bot's
 * managed role counts as the bot: Discord's @ menu offers it beside the bot, and a person
 * who picks it sends `<@&role>`.
 */
export function cleanText(message: Pick<Message, "content" | "mentions">, botId: string): string {
  const roles = message.mentions.guild?.roles.cache;
  return message.content
    .replace(new RegExp(`<@!?${botId}>`, "g"), "")
    .replace(/<@&(\d+)>/g, (whole, id: string) => {
      const role = message.mentions.roles.get(id) ?? roles?.get(id);
      if (!role) return whole;
      return role.tags?.botId === botId ? "" : `@${role.name}`;
    })
    .replace(/<@!?(\d+)>/g, (whole, id: string) => {
      const u = message.mentions.users.get(id);
      return u ? `@${u.displayName}` : whole;
    })
    .trim();
}

/**
 * Whether the message mentions the bot: its user, or its managed role. Not `mentions.has`,
 * which is also true for @everyone and for any other role the bot holds.
 */
function mentionsBot(message: Message<true>, botId: string): boolean {
  if (message.mentions.users.has(botId)) return true;
  const role = message.guild?.roles.botRoleFor(botId);
  return role != null && message.mentions.roles.has(role.id);
}

/** What a message asks: its text and files. */
interface Said {
  text: string;
  files: InboundFile[];
  /** The words a thread opened for it is named by, when not its text. */
  title?: string;
}

/**
 * What a message gives the model: its own text and files, or, for a forward (which has none
 * of its own), the text and files Discord copied from the message forwarded. A sticker or a
 * poll alone gives nothing.
 */
function said(message: Message, botId: string): Said {
  const own = { text: cleanText(message, botId), files: inboundFiles(message.attachments) };
  const forwarded = message.messageSnapshots.first();
  if (own.text || own.files.length > 0 || !forwarded) return own;
  const text = cleanText(forwarded, botId);
  const files = inboundFiles(forwarded.attachments);
  if (!text && files.length === 0) return own;
  return { text: text ? `Forwarded message:\n${text}` : "Forwarded message with files.", files };
}

const nothing = (s: Said) => s.text === "" && s.files.length === 0;

/**
 * What a mention with nothing of its own asks when it replies to someone's message: that
 * message, named as theirs. In a thread the thread so far is the question; in a channel,
 * the message replied to is the nearest thing to one.
 */
async function askedAbout(message: Message, botId: string): Promise<Said | undefined> {
  const replied = await repliedTo(message);
  if (!replied || replied.author.id === botId) return undefined;
  const about = said(replied, botId);
  if (nothing(about)) return undefined;
  const by = authorName(replied);
  return {
    text: about.text
      ? `About this message by ${by}:\n${about.text}`
      : `About this message by ${by}, with its files.`,
    files: about.files,
    ...(about.text ? { title: about.text } : {}),
  };
}

function authorName(message: Message): string {
  return message.member?.displayName ?? message.author.displayName ?? message.author.username;
}

/** Turns a gateway message into an `Inbound` where Switchboard should answer, and hands it over. */
export async function onMessage(ctx: DiscordContext, message: Message): Promise<void> {
  const botId = ctx.botId;
  if (!botId || message.author.id === botId) return;
  if (message.author.bot && !ctx.deps.config.discord.allowBots) return;
  if (message.type !== MessageType.Default && message.type !== MessageType.Reply) return;

  const asked = said(message, botId);

  if (!message.inGuild()) {
    const channel = message.channel;
    if (!channel.isSendable() || nothing(asked)) return;
    await dispatch(ctx, message, asked, dmKey(message.channelId), channelPlace(channel));
    return;
  }

  const mentioned = mentionsBot(message, botId);
  const channel = message.channel;
  if (channel.isThread()) {
    // A mention with nothing else still asks: the model answers the thread so far.
    if (!mentioned && nothing(asked)) return;
    const key = guildKey(message.guildId, channel.id);
    // A thread opened from a message has the message's id: its opening is that message.
    const follow =
      ctx.deps.config.discord.followThreads && (await ctx.deps.runner.knows(key, `discord:m:${channel.id}`));
    if (!mentioned && !follow) return;
    if (closedToBot(channel, botId)) {
      // No model turn for an answer Discord would refuse: a mention is told so, once an hour.
      if (mentioned && firstTellingIn(channel.id, message.author.id)) {
        await tellAuthor(message, channel.id, lockedSentence(channel));
      }
      return;
    }
    const place = channelPlace(channel, { rename: ctx.renamer(channel) });
    await dispatch(ctx, message, asked, key, place, {
      history: mentioned ? () => threadHistory(channel, message.id, botId) : undefined,
    });
    return;
  }
  if (!channel.isSendable()) return;
  // A reply to one of the bot's answers in the channel (Discord opened no thread for it) goes
  // on with that answer's conversation, as a message in its thread would.
  const continued = nothing(asked) ? undefined : await ctx.answers.continued(message, botId);
  const goesOn = continued !== undefined && (mentioned || ctx.deps.config.discord.followThreads);
  if (!mentioned && !goesOn) return;
  // Someone the access lists refuse gets no thread, only a short reply (once an hour).
  const admitted = ctx.deps.runner.admit?.({
    platform: "discord",
    channel: configuredChannel(channel),
    user: { id: message.author.id },
    from: provenanceOf(message.guildId, message.member),
  });
  if (admitted && admitted !== "yes") {
    if (admitted === "tell") {
      await message
        .reply({ content: REFUSED_NOTE, allowedMentions: { parse: [], repliedUser: false } })
        .catch((err: unknown) => log.warn({ err }, "refusal not shown"));
    }
    return;
  }
  if (continued && goesOn) {
    const place = channelAnswerPlace(channel, message.id, (id) => ctx.answers.remember(id, continued));
    await dispatch(ctx, message, asked, continued, place);
    return;
  }
  // Two gateway sessions (a deploy) both see the mention; only one may open the thread. The
  // other waits until that one has stored the message, and opens it if that one died first.
  const opener = `discord:thread-for:${message.id}`;
  if (!(await ctx.deps.runner.firstSight(opener)) && !(await ctx.deps.runner.redelivered?.(opener))) return;
  const question = nothing(asked) ? await askedAbout(message, botId) : asked;
  if (!question) {
    // Nothing to answer: a thread for it would hold only a guess at a question.
    await message
      .reply({ content: NOTHING_ASKED_ON_DISCORD, allowedMentions: { parse: [], repliedUser: false } })
      .catch((err: unknown) => log.warn({ err }, "what to ask not shown"));
    return;
  }
  // The turn starts while Discord opens the thread: the model need not wait for it. A
  // thread opened from a message has the message's id, so the session's key is known now;
  // if Discord refuses the thread, the answer goes to the channel under the same key.
  const opening = openThread(
    ctx.client,
    ctx.scheduler,
    ctx.lateThreads,
    message,
    provisionalName(question.title ?? question.text, `Question from ${authorName(message)}`),
  ).catch((err: unknown) => {
    log.warn({ err, channel: channel.id }, "could not open a thread; answering in the channel");
    return null;
  });
  const key = guildKey(message.guildId, message.id);
  const place = openingPlace(
    opening,
    channel as SendableChannels,
    (thread) => ctx.renamer(thread),
    message.id,
    (id) => ctx.answers.remember(id, key),
  );
  await dispatch(ctx, message, question, key, place, { claims: [opener] });
}

async function dispatch(
  ctx: DiscordContext,
  message: Message,
  asked: Said,
  key: ThreadKey,
  place: Place,
  opts: { history?: () => Promise<PriorMessage[]>; claims?: string[] } = {},
): Promise<void> {
  const { history, claims } = opts;
  // In a DM the asker is the place: a DM refused (they blocked the bot) has nowhere else to go.
  if (message.inGuild())
    place.elsewhere ??= async (text) => {
      if (firstTellingIn(place.channel, message.author.id)) await tellAuthor(message, place.channel, text);
    };
  const inbound: Inbound = {
    id: `discord:m:${message.id}`,
    key,
    platform: "discord",
    channel: configuredChannel(message.channel),
    sentAt: message.createdTimestamp,
    user: { id: message.author.id, name: authorName(message) },
    from: provenanceOf(message.guildId, message.member),
    text: asked.text,
    attachments: asked.files,
    ...(history ? { history } : {}),
    // Every replica of the gateway session has this message: one that took it may die before storing it.
    redelivered: true,
    ...(claims ? { claims } : {}),
    onStored: () => ctx.stored(message.id),
    reply: new DiscordReply(place, ctx.replyOptions()),
  };
  await ctx.deps.runner.handle(inbound);
}

/** What was said in the thread before `beforeId`, oldest first, with author names. */
export async function threadHistory(
  thread: ThreadChannel,
  beforeId: string,
  botId: string,
): Promise<PriorMessage[]> {
  const fetched = await thread.messages.fetch({ before: beforeId, limit: HISTORY_LIMIT });
  const list = [...fetched.values()].reverse();
  // A thread opened from a channel message starts with that message, which lives in the parent
  // channel. A forum post's opening message has the thread's id too: when it is the message
  // being answered (beforeId), it is the question, not an earlier message.
  if (thread.id !== beforeId && !list.some((m) => m.id === thread.id)) {
    const starter = await thread.fetchStarterMessage().catch(() => null);
    if (starter) list.unshift(starter);
  }
  return list
    .map((m) => ({ author: authorName(m), text: said(m, botId).text, fromBot: m.author.id === botId }))
    .filter((m) => m.text !== "");
}
