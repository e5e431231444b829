import { uploadLimit } from "./guild.js";
import type { DiscordEmulator, SlashOptions } from "./index.js";
import { contextOf, interactionStart } from "./installs.js";
import { interactionToken, snowflake } from "./snowflake.js";
import { ALL_PERMISSIONS } from "./state.js";
import type { StoredInteraction } from "./types.js";

/** A slash command (type 2) or its autocomplete (type 4, `focused` naming the option typed into). */
export interface CommandUse {
  type: 2 | 4;
  name: string;
  options: SlashOptions;
  channelId: string;
  userId: string;
  focused?: string;
}

/**
 * A person uses one of the app's commands: the interaction is recorded (its callbacks and
 * follow-ups fill the record) and sent as INTERACTION_CREATE, as Discord shapes it for a
 * guild channel or a DM, with the installs that authorized it.
 */
export function commandInteraction(emu: DiscordEmulator, use: CommandUse): StoredInteraction {
  const { type, name, options, channelId, userId, focused } = use;
  const s = emu.state;
  const channel = s.channels.get(channelId);
  const user = s.users.get(userId);
  if (!channel || !user) throw new Error(`No channel ${channelId} or user ${userId}`);
  const registered = [...s.commands.global, ...(s.commands.guild.get(s.guildId) ?? [])].find(
    (c) => c.name === name,
  );
  const id = snowflake();
  const record: StoredInteraction = {
    id,
    token: interactionToken(id),
    type,
    name,
    channelId,
    userId,
    ...interactionStart(s, channel, userId),
  };
  s.interactions.set(record.id, record);
  const optionList = Object.entries(options).map(([n, value]) => ({
    name: n,
    type: typeof value === "string" ? 3 : typeof value === "number" ? 4 : 5,
    value,
    ...(focused === n ? { focused: true } : {}),
  }));
  const guild = channel.guild_id;
  const payload: Record<string, unknown> = {
    id: record.id,
    application_id: s.applicationId,
    type,
    token: record.token,
    version: 1,
    data: {
      id: String(registered?.id ?? snowflake()),
      name,
      type: 1,
      options: optionList,
      ...(guild ? { guild_id: guild } : {}),
    },
    channel_id: channelId,
    channel: { ...channel },
    app_permissions: ALL_PERMISSIONS,
    attachment_size_limit: uploadLimit(s, channelId),
    locale: "en-US",
    entitlements: [],
    authorizing_integration_owners: record.owners,
    context: contextOf(s, channel),
  };
  if (guild) {
    payload.guild_id = guild;
    payload.guild_locale = "en-US";
    payload.member = { ...s.member(user), permissions: ALL_PERMISSIONS };
  } else {
    payload.user = user;
  }
  for (let n = emu.deliverTwice ? 2 : 1; n > 0; n--) emu.dispatch("INTERACTION_CREATE", payload);
  return record;
}
