import type { StoredInteraction } from "./types.js";

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
 */
function owners(installs: Installs, guildId: string | undefined, userId: string): Record<string, string> {
  return {
    ...(installs.guild ? { [GUILD_INSTALL]: guildId ?? "0" } : {}),
    ...(installs.user ? { [USER_INSTALL]: userId } : {}),
  };
}

/** What an interaction starts with: no callback and no follow-up yet, its send time, who authorized it. */
export function interactionStart(
  installs: Installs,
  guildId: string | undefined,
  userId: string,
): Pick<StoredInteraction, "callbacks" | "followupIds" | "sentAt" | "owners"> {
  return { callbacks: [], followupIds: [], sentAt: Date.now(), owners: owners(installs, guildId, userId) };
}

/** The follow-up cap applies: the interaction was authorized by a user install alone. */
export function followupsCapped(i: StoredInteraction): boolean {
  const keys = Object.keys(i.owners);
  return keys.length === 1 && keys[0] === USER_INSTALL;
}
