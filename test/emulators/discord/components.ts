import { uploadLimit } from "./guild.js";
import type { DiscordEmulator } from "./index.js";
import { contextOf, interactionStart } from "./installs.js";
import { type ModalValue, modalOpener, modalSubmission } from "./modal-submit.js";
import { interactionToken, snowflake } from "./snowflake.js";
import { ALL_PERMISSIONS } from "./state.js";
import type { StoredInteraction, StoredMessage } from "./types.js";

/**
 * Component and modal interactions (INTERACTION_CREATE types 3 and 5) in the shapes of
 * discord-api-types' `APIMessageComponentInteraction` and `APIModalSubmitInteraction`.
 * The callbacks, follow-ups and deadlines are the emulator's interaction routes, as for
 * slash commands. A modal the bot opens (callback type 9) is checked and recorded by
 * modals.ts; `submitModal` sends what the person enters in it.
 */

const ComponentType = { ActionRow: 1, Button: 2, StringSelect: 3, TextInput: 4 } as const;

function deliver(
  emu: DiscordEmulator,
  type: 3 | 5,
  data: Record<string, unknown>,
  channelId: string,
  userId: string,
  message?: StoredMessage,
): StoredInteraction {
  const s = emu.state;
  const channel = s.channels.get(channelId);
  const user = s.users.get(userId);
  if (!channel || !user) throw new Error(`No channel ${channelId} or user ${userId}`);
  const id = snowflake();
  const record: StoredInteraction = {
    id,
    token: interactionToken(id),
    type,
    name: String(data.custom_id),
    channelId,
    userId,
    ...interactionStart(s, channel, userId),
    ...(message ? { messageId: message.id } : {}),
  };
  s.interactions.set(record.id, record);
  const guild = channel.guild_id;
  const payload: Record<string, unknown> = {
    id: record.id,
    application_id: s.applicationId,
    type,
    token: record.token,
    version: 1,
    data,
    channel_id: channelId,
    channel: { ...channel },
    app_permissions: ALL_PERMISSIONS,
    attachment_size_limit: uploadLimit(s, channelId),
    locale: "en-US",
    entitlements: [],
    authorizing_integration_owners: record.owners,
    context: contextOf(s, channel),
    ...(message ? { message: s.messageJson(message) } : {}),
  };
  if (guild) {
    payload.guild_id = guild;
    payload.guild_locale = "en-US";
    payload.member = { ...s.member(user), permissions: ALL_PERMISSIONS };
  } else {
    payload.user = user;
  }
  emu.dispatch("INTERACTION_CREATE", payload);
  // Overlapping gateway sessions during a deploy deliver the same interaction twice.
  if (emu.deliverTwice) emu.dispatch("INTERACTION_CREATE", payload);
  return record;
}

/** A person clicks a button on `message`, or picks `values` in its string select. */
export function clickComponent(
  emu: DiscordEmulator,
  o: { message: StoredMessage; customId: string; userId: string; values?: string[] },
): StoredInteraction {
  const data =
    o.values === undefined
      ? { custom_id: o.customId, component_type: ComponentType.Button }
      : { custom_id: o.customId, component_type: ComponentType.StringSelect, values: o.values };
  return deliver(emu, 3, data, o.message.channelId, o.userId, o.message);
}

/** The form of `submitModal` for a modal the emulator did not see open: text inputs only. */
export interface BlindModalSubmit {
  customId: string;
  /** Custom id -> value, each sent as a legacy action row with one text input. */
  fields: Record<string, string>;
  channelId: string;
  userId: string;
  /** The message whose button opened the modal: the submission carries it. */
  message?: StoredMessage;
}

/** The form of `submitModal` for a modal the bot opened (callback type 9). */
export interface OpenedModalSubmit {
  /** The interaction the bot answered with the modal (the record or its id). */
  interaction?: StoredInteraction | string;
  /** Without `interaction`: the modal this person opened last and has still open. */
  userId?: string;
  /** Custom id -> what the person entered (see ModalValue); inputs left out keep their pre-filled value. */
  values?: Record<string, ModalValue>;
}

/**
 * A person submits a modal; returns the MODAL_SUBMIT interaction (type 5) sent to the bot.
 *
 * For a modal the bot opened, give its `interaction` (or the `userId` whose last modal it is)
 * and the `values` by custom id: the submission has Discord's shape for that modal (Labels
 * with `value`/`values`, legacy action rows, text displays by id, `resolved` for picked users,
 * roles, channels and files), comes from the person and channel the modal was opened for,
 * and carries the message when it was opened from a component on one. It throws for what
 * Discord's client would not let the person submit, and for a modal already submitted and
 * answered (Discord closes it then; an unanswered submission leaves it open to try again).
 *
 * The older form (`customId`, `fields`, `channelId`, `userId`, `message`) submits text inputs
 * of a modal the emulator never saw, as legacy action rows.
 */
export function submitModal(
  emu: DiscordEmulator,
  o: BlindModalSubmit | OpenedModalSubmit,
): StoredInteraction {
  if ("customId" in o) {
    const components = Object.entries(o.fields).map(([customId, value], i) => ({
      type: ComponentType.ActionRow,
      id: 2 * i + 1,
      components: [{ type: ComponentType.TextInput, id: 2 * i + 2, custom_id: customId, value }],
    }));
    return deliver(emu, 5, { custom_id: o.customId, components }, o.channelId, o.userId, o.message);
  }
  const s = emu.state;
  const opener = modalOpener(s.interactions, o);
  const data = modalSubmission(s, opener.modal, o.values ?? {}, opener.channelId);
  const message = opener.messageId ? s.findMessage(opener.messageId) : undefined;
  const rec = deliver(emu, 5, data, opener.channelId, opener.userId, message);
  opener.modal.submissions.push(rec.id);
  return rec;
}
