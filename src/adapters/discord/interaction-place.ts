import {
  type ChatInputCommandInteraction,
  DiscordAPIError,
  MessageFlags,
  type ModalSubmitInteraction,
  RESTJSONErrorCodes,
} from "discord.js";
import { log } from "../../log.js";
import { body, channelOps, NO_PINGS, type Posted, type WritableChannel } from "./places.js";
import { asWriteError, type OutgoingMessage, type Place, type PlaceOps } from "./reply.js";
import { channelBuckets, webhookBucket } from "./write-policy.js";

/** How long Discord takes an interaction's token for its webhook (edits, follow-ups) after the interaction. */
export const INTERACTION_TOKEN_MS = 15 * 60_000;

/**
 * Writes this close to the token's end go through the channel already: one waiting for its
 * budget, or on its way, would arrive after the end and be refused.
 */
const TOKEN_MARGIN_MS = 30_000;

/** Discord refused the webhook itself (its token expired, or the interaction's webhook is gone): nothing was written. */
export function tokenRefused(err: unknown): boolean {
  return (
    err instanceof DiscordAPIError &&
    (err.code === RESTJSONErrorCodes.InvalidWebhookToken || err.code === RESTJSONErrorCodes.UnknownWebhook)
  );
}

/**
 * An interaction with no thread to answer in (a DM, a thread already, a channel without
 * thread permission): the deferred reply becomes the first message, follow-ups the rest.
 * The token behind them lasts 15 minutes, and a long tool run, a form or a sign-in can
 * outlast it: from shortly before its end, or when Discord refuses it, every write goes
 * through the channel's own message endpoints, editing the same messages by their ids
 * (the bot wrote them). Posts that are refused wrote nothing, so each is sent once, there.
 */
export function interactionPlace(
  interaction: ChatInputCommandInteraction | ModalSubmitInteraction,
  posted?: Posted,
): Place {
  let originalUsed = false;
  let refused = false;
  const ends = interaction.createdTimestamp + INTERACTION_TOKEN_MS - TOKEN_MARGIN_MS;
  const tokenLives = () => !refused && Date.now() < ends;
  const channelId = interaction.channelId ?? "";
  let channel: Promise<WritableChannel> | undefined;
  const getChannel = () =>
    (channel ??= (async () => {
      const c = interaction.channel ?? (await interaction.client.channels.fetch(channelId));
      if (!c?.isSendable()) throw new Error(`Discord channel ${channelId} cannot be written to`);
      return c;
    })());
  const inChannel = channelOps(getChannel, channelId, posted ? { posted } : {});

  /** `hook` through the interaction's webhook while its token lives, else `fallback` through the channel. */
  async function write<T>(hook: () => Promise<T>, fallback: () => Promise<T>): Promise<T> {
    if (tokenLives()) {
      try {
        return await hook();
      } catch (err) {
        if (!tokenRefused(err)) throw asWriteError(err);
        refused = true;
        log.info(
          { interaction: interaction.id },
          "interaction token refused; the answer goes on in its channel",
        );
      }
    }
    return fallback();
  }
  const say = async (message: OutgoingMessage) => {
    await (await getChannel()).send({ ...message, allowedMentions: NO_PINGS });
  };

  // An interaction's webhook is outside the global limit: its token is its own bucket.
  const webhook = [webhookBucket(interaction.token)];
  const ops: PlaceOps = {
    buckets: () => (tokenLives() ? webhook : channelBuckets(channelId)),
    // Stop while the answer is written and 👍 / 👎 once it is done, as under a channel's answers.
    post: (text, files, controls) =>
      write(
        async () => {
          if (!originalUsed) {
            // Only once Discord took it: after a 429 the writer posts again, and that must still fill the deferred reply.
            const id = (await interaction.editReply(body(text, files, controls))).id;
            originalUsed = true;
            await posted?.(id);
            return id;
          }
          const { id } = await interaction.followUp(body(text, files, controls));
          await posted?.(id);
          return id;
        },
        // A deferred reply never filled cannot be reached without the token: the answer starts below it.
        () => inChannel.post(text, files, controls),
      ),
    edit: (id, text, files, controls) =>
      write(
        async () => {
          await interaction.editReply({ message: id, ...body(text, files, controls) });
        },
        () => inChannel.edit(id, text, files, controls),
      ),
    clearControls: (id) =>
      write(
        async () => {
          await interaction.editReply({ message: id, components: [] });
        },
        () => inChannel.clearControls!(id),
      ),
    ask: (text, components) =>
      write(
        async () => {
          const { id } = await interaction.followUp({ content: text, components, allowedMentions: NO_PINGS });
          await posted?.(id);
          return id;
        },
        () => inChannel.ask!(text, components),
      ),
    settle: (id, text) =>
      write(
        async () => {
          await interaction.editReply({
            message: id,
            content: text,
            components: [],
            allowedMentions: NO_PINGS,
          });
        },
        () => inChannel.settle!(id, text),
      ),
  };
  return {
    ops,
    channel: interaction.channelId ?? undefined,
    send: (message) =>
      write(
        async () => {
          await interaction.followUp({ ...message, allowedMentions: NO_PINGS });
        },
        () => say(message),
      ),
    notice: (text) =>
      write(
        async () => {
          if (!originalUsed) {
            // Nothing answered yet (a refusal): the deferred "thinking…" would stay for 15 minutes.
            originalUsed = true;
            await interaction
              .deleteReply()
              .catch((err: unknown) => log.debug({ err }, "deferred reply not deleted"));
          }
          await interaction.followUp({ content: text, flags: MessageFlags.Ephemeral });
        },
        // Without the token nothing can be shown to the asker alone: the channel sees it.
        () => say({ content: text }),
      ),
    typing: async () => {
      const c = interaction.channel;
      if (c?.isSendable()) {
        await c.sendTyping().catch((err: unknown) => log.debug({ err }, "typing not shown"));
      }
    },
  };
}
