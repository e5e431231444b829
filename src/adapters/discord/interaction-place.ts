import {
  type AttachmentBuilder,
  type ChatInputCommandInteraction,
  DiscordAPIError,
  InteractionContextType,
  MessageFlags,
  type ModalSubmitInteraction,
  RESTJSONErrorCodes,
} from "discord.js";
import { log } from "../../log.js";
import { MessageGoneError } from "../../runtime/message-ops.js";
import { sendDirectly } from "./direct.js";
import { AnswerFold, followUpCap } from "./followup-fold.js";
import { body, channelOps, NO_PINGS, type Posted, type WritableChannel, written } from "./places.js";
import {
  asWriteError,
  DISCORD_MESSAGE_LIMIT,
  type OutgoingMessage,
  type Place,
  type PlaceOps,
  type QuestionRow,
} from "./reply.js";
import { channelBuckets, webhookBucket } from "./write-policy.js";

/** How long Discord takes an interaction's token for its webhook (edits, follow-ups) after the interaction. */
export const INTERACTION_TOKEN_MS = 15 * 60_000;

/**
 * Writes this close to the token's end go through the channel already: one waiting for its
 * budget, or on its way, would arrive after the end and be refused.
 */
const TOKEN_MARGIN_MS = 30_000;

/** Discord refused the webhook itself (its token expired, or the interaction's webhook is gone): nothing was written. */
function tokenRefused(err: unknown): boolean {
  return (
    err instanceof DiscordAPIError &&
    (err.code === RESTJSONErrorCodes.InvalidWebhookToken || err.code === RESTJSONErrorCodes.UnknownWebhook)
  );
}

/** Where an interaction's own reply stands when its place is made. */
export interface InteractionReplyState {
  /** The reply's message id (the deferral's answer names it), for writing to it through the channel. */
  original?: string;
  /** The reply shows the question ("alice asked: …"): the answer goes under it, never over it. */
  echo?: boolean;
  /** Told the id of each message the answer posts. */
  posted?: Posted;
}

/** Said, mentioning the asker, above an answer whose deferred reply could not be filled. */
export const ANSWER_BELOW =
  "Your answer is below. My first reply could not be updated: Discord allows that for 15 minutes only.";

/** What a deferred reply left empty shows once the turn's notice went to its asker by DM. */
export const SENT_PRIVATELY = "I replied to you privately, in a direct message.";
/** … and once Discord would not deliver that DM. */
export const NOT_SENT_PRIVATELY =
  "I had a reply for you alone, but Discord would not let me send it to you as a direct message.";

/**
 * A notice sent by direct message, away from the conversation it is about: its first line
 * names the channel where it was asked (none in the bot's own DM with the person).
 */
function aboutAsked(interaction: ChatInputCommandInteraction | ModalSubmitInteraction, text: string): string {
  const inDm = interaction.context === InteractionContextType.BotDM;
  const said =
    inDm || !interaction.channelId ? text : `About what you asked in <#${interaction.channelId}>:\n${text}`;
  return said.length > DISCORD_MESSAGE_LIMIT ? `${said.slice(0, DISCORD_MESSAGE_LIMIT - 1)}…` : said;
}

/**
 * Discord will not let the bot edit that message: it is gone, or not the bot's to edit. A
 * 429 or an outage is not this: the writer waits and tries the same write again.
 */
function cannotEdit(err: unknown): boolean {
  if (err instanceof MessageGoneError) return true;
  return err instanceof DiscordAPIError && err.status >= 400 && err.status < 500 && err.status !== 429;
}

/**
 * An interaction with no thread to answer in (a DM, a thread already, a channel without
 * thread permission): the deferred reply becomes the first message (the answer's, or a
 * question asked before it), follow-ups the rest. The token behind them lasts 15 minutes,
 * and a long tool run, a form or a sign-in can outlast it: from shortly before its end, or
 * when Discord refuses it, every write goes through the channel's own message endpoints,
 * editing the same messages by their ids (the bot wrote them), the deferred reply too when
 * nothing filled it yet. One that cannot be edited (deleted) stays as it is, and the answer
 * is posted under a line that mentions the asker. Posts that are refused wrote nothing, so
 * each is sent once, there. A notice for the asker is theirs alone, and never leaves the
 * reply "thinking…" (see `privately`).
 */
export function interactionPlace(
  interaction: ChatInputCommandInteraction | ModalSubmitInteraction,
  state: InteractionReplyState = {},
): Place {
  const { posted } = state;
  const originalId = state.original;
  /**
   * The reply holds the question, the answer's first message, a question with buttons or
   * a notice's line (or is deleted): every post after it is a new message.
   */
  let originalUsed = state.echo === true;
  /** The question shown in the reply, which the answer's first message in the channel answers. */
  let replyTo = state.echo ? originalId : undefined;
  let refused = false;
  /**
   * The messages this interaction's token wrote (its reply and follow-ups). A webhook edits
   * only its own: Discord answers 404 Unknown Message for any other, even the bot's own
   * message in the same channel (a question an earlier turn asked, settled by this one).
   */
  const ownIds = new Set(originalId ? [originalId] : []);
  const own = (id: string) => {
    ownIds.add(id);
    return id;
  };
  /** Follow-ups the token sent, against its cap; the answer's last message posted, as last written. */
  const cap = followUpCap(interaction);
  let followUps = 0;
  let lastAnswer: { id: string; text: string } | undefined;
  /** Set once the answer needs more messages than the cap leaves: the rest goes into a file. */
  let fold: AnswerFold | undefined;
  const followUp = async (options: Parameters<typeof interaction.followUp>[0]) => {
    const message = await interaction.followUp(options);
    followUps++;
    return message;
  };
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
  const reference = {
    next: () => replyTo,
    used: () => {
      replyTo = undefined;
    },
  };
  const inChannel = channelOps(getChannel, channelId, { reference, ...(posted ? { posted } : {}) });

  /**
   * `hook` through the interaction's webhook while its token lives, else `fallback` through
   * the channel; an edit of a message the token did not write (`of`) goes there at once.
   */
  async function write<T>(hook: () => Promise<T>, fallback: () => Promise<T>, of?: string): Promise<T> {
    if (tokenLives() && (of === undefined || ownIds.has(of))) {
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

  /**
   * Runs `use`, the write that fills the deferred reply, with the reply taken from its
   * start: a write beside it (a question asked while the first text is on its way) posts a
   * new message rather than writing over it. One that fails gives it back: after a 429 the
   * writer posts again, and that must still fill the deferred reply.
   */
  async function taking<T>(use: () => Promise<T>): Promise<T> {
    originalUsed = true;
    try {
      return await use();
    } catch (err) {
      originalUsed = false;
      throw err;
    }
  }

  /**
   * A post through the channel. The deferred reply, still "thinking…", is filled by its id
   * (it would look busy for good); one that cannot be is left, and a line mentioning the
   * asker, in reply to it, says that the answer follows.
   */
  async function postInChannel(text: string, files?: AttachmentBuilder[], controls?: QuestionRow[]) {
    if (!originalUsed && originalId) {
      try {
        return await taking(async () => {
          await inChannel.edit(originalId, text, files, controls);
          await posted?.(originalId);
          return originalId;
        });
      } catch (err) {
        if (!cannotEdit(err)) throw err;
        log.info(
          { err, interaction: interaction.id },
          "the deferred reply cannot be edited; answering below it",
        );
      }
    }
    if (!originalUsed) {
      const asker = interaction.user.id;
      await taking(() =>
        written(async () =>
          (await getChannel()).send({
            content: `<@${asker}> ${ANSWER_BELOW}`,
            allowedMentions: { parse: [], users: [asker] },
            ...(originalId ? { reply: { messageReference: originalId, failIfNotExists: false } } : {}),
          }),
        ),
      );
    }
    return inChannel.post(text, files, controls);
  }
  /**
   * A notice once the token is over. Nothing can be shown to the asker alone in a channel
   * any more, and a notice (a refusal, their budget, an error of their turn) is theirs: it
   * goes by DM, or nowhere, never to the channel.
   *
   * A deferred reply still "thinking…" must not stay so. In the bot's own DM with the asker
   * it shows the notice itself: nobody else reads it. Elsewhere it says only where the
   * notice went, or that it could not go. It is not deleted, although the bot may delete
   * its own message: while the token lives the ephemeral notice appears where the reply
   * was, but now the /ask would vanish from the channel without a word, and an asker who
   * misses the DM, or takes none, would never learn that they were answered.
   */
  async function privately(text: string): Promise<void> {
    const waiting = !originalUsed && originalId !== undefined ? originalId : undefined;
    originalUsed = true;
    const inDm = interaction.context === InteractionContextType.BotDM;
    if (waiting && inDm && (await fillReply(waiting, text))) return;
    const sent = await sendDirectly(interaction.user, aboutAsked(interaction, text));
    if (waiting && !inDm) await fillReply(waiting, sent ? SENT_PRIVATELY : NOT_SENT_PRIVATELY);
  }

  /** Writes `text` in the deferred reply through the channel; false when Discord will not. */
  async function fillReply(id: string, text: string): Promise<boolean> {
    try {
      await inChannel.edit(id, text);
      return true;
    } catch (err) {
      log.info({ err, interaction: interaction.id }, "the deferred reply cannot be edited; left as it is");
      return false;
    }
  }
  const say = async (message: OutgoingMessage) => {
    await (await getChannel()).send({ ...message, allowedMentions: NO_PINGS });
  };

  const postMessage = (text: string, files?: AttachmentBuilder[], controls?: QuestionRow[]) =>
    write(
      async () => {
        if (!originalUsed) {
          return taking(async () => {
            const id = own((await interaction.editReply(body(text, files, controls))).id);
            await posted?.(id);
            return id;
          });
        }
        const id = own((await followUp(body(text, files, controls))).id);
        replyTo = undefined;
        await posted?.(id);
        return id;
      },
      () => postInChannel(text, files, controls),
    );
  const editMessage = (id: string, text: string, files?: AttachmentBuilder[], controls?: QuestionRow[]) =>
    write(
      async () => {
        await interaction.editReply({ message: id, ...body(text, files, controls) });
      },
      () => inChannel.edit(id, text, files, controls),
      id,
    );

  // An interaction's webhook is outside the global limit: its token is its own bucket.
  const webhook = [webhookBucket(interaction.token)];
  const ops: PlaceOps = {
    buckets: () => (tokenLives() ? webhook : channelBuckets(channelId)),
    // Stop while the answer is written and 👍 / 👎 once it is done, as under a channel's answers.
    async post(text, files, controls) {
      // The cap reached, the answer goes on in a file on its last message (see AnswerFold).
      if (!fold && lastAnswer && originalUsed && followUps >= cap && tokenLives())
        fold = new AnswerFold(lastAnswer.id, lastAnswer.text);
      if (fold) {
        const { id, edit } = fold.post(text, files, controls);
        await editMessage(edit.id, edit.text, edit.files, edit.controls);
        return id;
      }
      const id = await postMessage(text, files, controls);
      lastAnswer = { id, text };
      return id;
    },
    async edit(id, text, files, controls) {
      if (fold?.has(id)) {
        const edit = fold.edit(id, text, files, controls);
        return editMessage(edit.id, edit.text, edit.files, edit.controls);
      }
      if (lastAnswer?.id === id) lastAnswer.text = text;
      return editMessage(id, text, files, controls);
    },
    async clearControls(id) {
      let target = id;
      if (fold?.has(id)) {
        const edit = fold.edit(id, undefined, undefined, []);
        if (edit.controls === undefined) return;
        target = edit.id;
      }
      await write(
        async () => {
          await interaction.editReply({ message: target, components: [] });
        },
        () => inChannel.clearControls!(target),
        target,
      );
    },
    ask: (text, components) =>
      // A question before any of the answer takes the deferred reply's place, as a first
      // post would: left "thinking…" above it, the reply would look busy while the bot waits
      // for a click. The answer comes under it.
      !originalUsed
        ? postMessage(text, undefined, components)
        : write(
            async () => {
              const { id } = await followUp({
                content: text,
                components,
                allowedMentions: NO_PINGS,
              });
              own(id);
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
        id,
      ),
  };
  return {
    ops,
    channel: interaction.channelId ?? undefined,
    send: (message) =>
      write(
        async () => {
          await followUp({ ...message, allowedMentions: NO_PINGS });
        },
        () => say(message),
      ),
    notice: (text) =>
      write(
        async () => {
          if (!originalUsed) {
            // Nothing answered yet (a refusal): the deferred "thinking…" would stay for 15 minutes.
            originalUsed = true;
            try {
              await interaction.deleteReply();
            } catch (err) {
              // Past the token, the reply is still there to fill: see `privately`.
              if (tokenRefused(err)) {
                originalUsed = false;
                throw err;
              }
              log.debug({ err }, "deferred reply not deleted");
            }
          }
          await followUp({ content: text, flags: MessageFlags.Ephemeral });
        },
        () => privately(text),
      ),
    fileLimit: () => interaction.attachmentSizeLimit,
    typing: async () => {
      const c = interaction.channel;
      if (c?.isSendable()) {
        await c.sendTyping().catch((err: unknown) => log.debug({ err }, "typing not shown"));
      }
    },
  };
}
