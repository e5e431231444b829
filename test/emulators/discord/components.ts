import type { DiscordEmulator } from "./index.js";
import { snowflake } from "./snowflake.js";
import { ALL_PERMISSIONS } from "./state.js";
import type { StoredInteraction, StoredMessage } from "./types.js";

/**
 * Component and modal interactions (INTERACTION_CREATE types 3 and 5) in the shapes of
 * discord-api-types' `APIMessageComponentInteraction` and `APIModalSubmitInteraction`.
 * The callbacks, follow-ups and deadlines are the emulator's interaction routes, as for
 * slash commands.
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
  const record: StoredInteraction = {
    id: snowflake(),
    token: `itoken-${snowflake()}`,
    type,
    name: String(data.custom_id),
    channelId,
    userId,
    callbacks: [],
    followupIds: [],
    sentAt: Date.now(),
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
    locale: "en-US",
    entitlements: [],
    authorizing_integration_owners: guild ? { "0": guild } : { "1": userId },
    context: guild ? 0 : 1,
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

/**
 * A person submits a modal with text inputs (`fields`: custom id -> value). With `message`,
 * the modal was opened from a button on it (its submission may then update that message).
 */
export function submitModal(
  emu: DiscordEmulator,
  o: {
    customId: string;
    fields: Record<string, string>;
    channelId: string;
    userId: string;
    message?: StoredMessage;
  },
): StoredInteraction {
  const components = Object.entries(o.fields).map(([customId, value], i) => ({
    type: ComponentType.ActionRow,
    id: 2 * i + 1,
    components: [{ type: ComponentType.TextInput, id: 2 * i + 2, custom_id: customId, value }],
  }));
  return deliver(emu, 5, { custom_id: o.customId, components }, o.channelId, o.userId, o.message);
}
