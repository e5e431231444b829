import {
  type AttachmentBuilder,
  type Client,
  DiscordAPIError,
  RESTJSONErrorCodes,
  type SendableChannels,
  type ThreadChannel,
} from "discord.js";
import { guildFileLimit } from "./files.js";
import { asWriteError, type OutgoingMessage, type Place, type PlaceOps, type QuestionRow } from "./reply.js";
import { channelBuckets } from "./write-policy.js";

/** A channel, thread or DM the bot can write in. */
export type WritableChannel = SendableChannels | ThreadChannel;

/** What Discord takes in `channel`: by its guild's boosts, a DM's default. */
const fileLimitIn = (channel: WritableChannel) => guildFileLimit("guild" in channel ? channel.guild : null);

/** Nobody gets pinged by a bot's answer, whatever the model writes. */
export const NO_PINGS = { parse: [] as never[] };

/** Discord answered that the message does not exist (deleted, or never there). */
function unknownMessage(err: unknown): boolean {
  return err instanceof DiscordAPIError && err.code === RESTJSONErrorCodes.UnknownMessage;
}

/**
 * The person's message an answer in the channel replies to (see `openingPlace`): `next`
 * names it while the answer's first message is still to be posted, `used` once it is.
 */
interface ReplyReference {
  next(): string | undefined;
  used(): void;
}

/** A platform write, its failure as the writer reads it (a 429, a deleted message: see asWriteError). */
export async function written<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    throw asWriteError(err);
  }
}

/** A message's text and files, with its buttons when given (absent: left as they are), pinging nobody. */
export function body(
  text: string,
  files: AttachmentBuilder[] | undefined,
  controls: QuestionRow[] | undefined,
) {
  return {
    content: text,
    files,
    ...(controls === undefined ? {} : { components: controls }),
    allowedMentions: NO_PINGS,
  };
}

/** Told the id of each message an answer posts (its text or a question), once Discord has it. */
export type Posted = (messageId: string) => Promise<void>;

/** Writes to a channel that may have to be fetched first (a reply rebuilt in a fresh process). */
export function channelOps(
  channelOf: WritableChannel | (() => Promise<WritableChannel>),
  channelId: string | (() => string),
  opts: { reference?: ReplyReference; posted?: Posted } = {},
): PlaceOps {
  const { reference, posted } = opts;
  const get = typeof channelOf === "function" ? channelOf : async () => channelOf;
  const idOf = typeof channelId === "function" ? channelId : () => channelId;
  return {
    buckets: () => channelBuckets(idOf()),
    keyed: true,
    async post(text, files, controls, key) {
      try {
        const components = controls === undefined ? {} : { components: controls };
        const nonce = key ? { nonce: key, enforceNonce: true } : {};
        const channel = await get();
        const replyTo = reference?.next();
        // A deleted question leaves the answer without a reference, not unsent.
        const reply = replyTo ? { reply: { messageReference: replyTo, failIfNotExists: false } } : {};
        const message = await channel.send({
          content: text,
          files,
          ...components,
          ...nonce,
          ...reply,
          allowedMentions: NO_PINGS,
        });
        if (replyTo) reference?.used();
        await posted?.(message.id);
        // The nonce was seen: Discord returned the message posted before, as it was then.
        if (key && message.content !== text) {
          await message.edit({ content: text, files, ...components, allowedMentions: NO_PINGS });
        }
        return message.id;
      } catch (err) {
        throw asWriteError(err);
      }
    },
    edit: (id, text, files, controls) =>
      written(async () => {
        await (await get()).messages.edit(id, body(text, files, controls));
      }),
    clearControls: (id) =>
      written(async () => {
        await (await get()).messages.edit(id, { components: [] });
      }),
    async remove(id) {
      try {
        await (await get()).messages.delete(id);
      } catch (err) {
        throw asWriteError(err);
      }
    },
    async ask(text, components) {
      try {
        const { id } = await (await get()).send({ content: text, components, allowedMentions: NO_PINGS });
        await posted?.(id);
        return id;
      } catch (err) {
        throw asWriteError(err);
      }
    },
    async settle(id, text) {
      try {
        await (await get()).messages.edit(id, { content: text, components: [], allowedMentions: NO_PINGS });
      } catch (err) {
        throw asWriteError(err);
      }
    },
    async read(id) {
      try {
        return (await (await get()).messages.fetch({ message: id, force: true })).content;
      } catch (err) {
        if (unknownMessage(err)) return null;
        throw err;
      }
    },
  };
}

/** A thread, channel or DM. `rename` is given only for threads the bot opened itself. */
export function channelPlace(
  channel: WritableChannel,
  opts: { rename?: (title: string) => Promise<void>; notice?: (text: string) => Promise<void> } = {},
): Place {
  return {
    ops: channelOps(channel, channel.id),
    channel: channel.id,
    async send(message: OutgoingMessage) {
      await channel.send({ ...message, allowedMentions: NO_PINGS });
    },
    notice:
      opts.notice ??
      (async (text) => {
        await channel.send({ content: text, allowedMentions: NO_PINGS });
      }),
    typing: () => channel.sendTyping(),
    rename: opts.rename,
    fileLimit: () => fileLimitIn(channel),
  };
}

/**
 * The thread the bot is opening under a person's message (`question`): the turn starts at
 * once and its writes wait for the thread (whose id is the message's, as on Discord); if
 * Discord refuses the thread (`opening` gives null), the answer goes to the message's
 * channel instead, its first message a reply to the question, so that a busy channel shows
 * which answer is whose, and `inChannel` is told each message it posts there.
 */
export function openingPlace(
  opening: Promise<ThreadChannel | null>,
  channel: SendableChannels,
  rename: (thread: ThreadChannel) => ((title: string) => Promise<void>) | undefined,
  question: string,
  inChannel?: Posted,
): Place {
  let thread: ThreadChannel | null | undefined;
  const ready = opening.then((t) => {
    thread = t;
  });
  const get = async (): Promise<WritableChannel> => {
    await ready;
    return thread ?? channel;
  };
  let replied = false;
  const reference: ReplyReference = {
    next: () => (thread || replied ? undefined : question),
    used: () => {
      replied = true;
    },
  };
  const posted: Posted | undefined = inChannel && (async (id) => (thread ? undefined : inChannel(id)));
  const ops = channelOps(get, () => (thread ?? channel).id, { reference, ...(posted ? { posted } : {}) });
  return {
    ops,
    get channel() {
      return (thread ?? channel).id;
    },
    ready,
    opened: () => Boolean(thread),
    fileLimit: () => fileLimitIn(thread ?? channel),
    async send(message) {
      await (await get()).send({ ...message, allowedMentions: NO_PINGS });
    },
    async notice(text) {
      await (await get()).send({ content: text, allowedMentions: NO_PINGS });
    },
    typing: async () => {
      await (await get()).sendTyping();
    },
    async rename(title) {
      await ready;
      if (thread) await rename(thread)?.(title);
    },
  };
}

/** An answer that goes on in the channel, its first message a reply to the person's (`question`). */
export function channelAnswerPlace(channel: SendableChannels, question: string, inChannel: Posted): Place {
  return openingPlace(Promise.resolve(null), channel, () => undefined, question, inChannel);
}

/**
 * A channel known only by its id (from a stored reply address): fetched on the first
 * write. An interaction's messages are edited this way too, since its token is gone
 * with the process that had it; the bot wrote them, so it may edit them.
 */
export function channelPlaceById(client: Client, id: string, posted?: Posted): Place {
  let channel: Promise<WritableChannel> | undefined;
  let fetched: WritableChannel | undefined;
  const get = () => {
    if (channel) return channel;
    const fetching = client.channels.fetch(id).then((c) => {
      if (!c?.isSendable()) throw new Error(`Discord channel ${id} cannot be written to`);
      fetched = c;
      return c;
    });
    // Kept, one reset (the client makes no retries of its own) would fail every later
    // write of the reply, and each retry of the writer's, with the same error.
    fetching.catch(() => {
      if (channel === fetching) channel = undefined;
    });
    channel = fetching;
    return fetching;
  };
  return {
    ops: channelOps(get, id, posted ? { posted } : {}),
    channel: id,
    // Files go after the answer's writes, by which time the channel is fetched.
    fileLimit: () => (fetched ? fileLimitIn(fetched) : undefined),
    async send(message) {
      await (await get()).send({ ...message, allowedMentions: NO_PINGS });
    },
    async notice(text) {
      await (await get()).send({ content: text, allowedMentions: NO_PINGS });
    },
    typing: async () => {
      await (await get()).sendTyping();
    },
  };
}
