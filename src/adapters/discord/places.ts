import {
  type ChatInputCommandInteraction,
  MessageFlags,
  type SendableChannels,
  type ThreadChannel,
} from "discord.js";
import { log } from "../../log.js";
import type { MessageOps } from "../../runtime/stream.js";
import { asWriteError, type OutgoingMessage, type Place } from "./reply.js";

/** A channel, thread or DM the bot can write in. */
export type WritableChannel = SendableChannels | ThreadChannel;

/** Nobody gets pinged by a bot's answer, whatever the model writes. */
const NO_PINGS = { parse: [] as never[] };

export function channelOps(channel: WritableChannel): MessageOps {
  return {
    async post(text) {
      try {
        return (await channel.send({ content: text, allowedMentions: NO_PINGS })).id;
      } catch (err) {
        throw asWriteError(err);
      }
    },
    async edit(id, text) {
      try {
        await channel.messages.edit(id, { content: text, allowedMentions: NO_PINGS });
      } catch (err) {
        throw asWriteError(err);
      }
    },
    async remove(id) {
      try {
        await channel.messages.delete(id);
      } catch (err) {
        throw asWriteError(err);
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
    ops: channelOps(channel),
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
  };
}

/**
 * An interaction with no thread to answer in (a DM, a thread already, a channel without
 * thread permission): the deferred reply becomes the first message, follow-ups the rest.
 */
export function interactionPlace(interaction: ChatInputCommandInteraction): Place {
  let originalUsed = false;
  const ops: MessageOps = {
    async post(text) {
      try {
        if (!originalUsed) {
          // Only once Discord took it: after a 429 the writer posts again, and that must still fill the deferred reply.
          const id = (await interaction.editReply({ content: text, allowedMentions: NO_PINGS })).id;
          originalUsed = true;
          return id;
        }
        return (await interaction.followUp({ content: text, allowedMentions: NO_PINGS })).id;
      } catch (err) {
        throw asWriteError(err);
      }
    },
    async edit(id, text) {
      try {
        await interaction.editReply({ message: id, content: text, allowedMentions: NO_PINGS });
      } catch (err) {
        throw asWriteError(err);
      }
    },
  };
  return {
    ops,
    async send(message) {
      await interaction.followUp({ ...message, allowedMentions: NO_PINGS });
    },
    async notice(text) {
      await interaction.followUp({ content: text, flags: MessageFlags.Ephemeral });
    },
    typing: async () => {
      const channel = interaction.channel;
      if (channel?.isSendable()) {
        await channel.sendTyping().catch((err: unknown) => log.debug({ err }, "typing not shown"));
      }
    },
  };
}
