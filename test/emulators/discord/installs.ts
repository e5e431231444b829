import { snowflake } from "./snowflake.js";
import type { DiscordState } from "./state.js";
import { type ChannelObject, ChannelType, type StoredInteraction, type UserObject } from "./types.js";

/**
 * Where the app is installed: to servers (the `bot` scope of Switchboard's invite) and to
 * people's accounts (a user install, enabled in the Developer Portal). Each interaction
 * names the installs that authorized it in `authorizing_integration_owners`.
 */
export interface Installs {
  guild: boolean;
  user: boolean;
}

const GUILD_INSTALL = "0";
const USER_INSTALL = "1";

/**
 * Discord's documented cap ("Create Followup Message"): 5 follow-ups for an interaction
 * authorized by a user install alone, i.e. the app used where its bot is not installed.
 * Past it, error 40094. Discord documents no cap for the others.
 */
export const USER_INSTALL_FOLLOWUPS = 5;

/**
 * `authorizing_integration_owners`, as Discord fills it: a server install maps to the
 * guild's id, or to "0" in a DM with the bot; a user install maps to the person's id.
 * Where the bot is no member (a private channel), only a user install can authorize.
 */
function owners(s: DiscordState, channel: ChannelObject, userId: string): Record<string, string> {
  const { installs } = s;
  const guild = installs.guild && !s.withoutBot.has(channel.id);
  return {
    ...(guild ? { [GUILD_INSTALL]: channel.guild_id ?? "0" } : {}),
    ...(installs.user ? { [USER_INSTALL]: userId } : {}),
  };
}

/** Where the interaction comes from (`context`): a guild (0), the bot's DM (1), a private channel (2). */
export function contextOf(s: DiscordState, channel: ChannelObject): 0 | 1 | 2 {
  if (channel.guild_id) return 0;
  return s.withoutBot.has(channel.id) ? 2 : 1;
}

/** What an interaction starts with: no callback and no follow-up yet, its send time, who authorized it. */
export function interactionStart(
  s: DiscordState,
  channel: ChannelObject,
  userId: string,
): Pick<StoredInteraction, "callbacks" | "followupIds" | "sentAt" | "owners"> {
  const authorized = owners(s, channel, userId);
  if (Object.keys(authorized).length === 0) throw new Error("No install of the app may be used here");
  return { callbacks: [], followupIds: [], sentAt: Date.now(), owners: authorized };
}

/**
 * A group DM of people, the app used there through a user install: its bot is no member,
 * so it gets none of the channel's events, and each of its requests there is refused with
 * 403 Missing Access; only the interaction's webhook writes there.
 */
export function privateChannel(s: DiscordState, members: UserObject[]): ChannelObject {
  const channel: ChannelObject = {
    id: snowflake(),
    type: ChannelType.GroupDM,
    recipients: members,
    last_message_id: null,
  };
  s.channels.set(channel.id, channel);
  s.messages.set(channel.id, []);
  s.withoutBot.add(channel.id);
  return channel;
}

/** The follow-up cap applies: the interaction was authorized by a user install alone. */
export function followupsCapped(i: StoredInteraction): boolean {
  const keys = Object.keys(i.owners);
  return keys.length === 1 && keys[0] === USER_INSTALL;
}
