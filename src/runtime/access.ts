import type { Config } from "../config.js";
import { OncePer } from "../core/once-per.js";
import type { Platform } from "../core/thread.js";
import { log } from "../log.js";
import type { Command, Inbound } from "./contract.js";

/** Where a message or command comes from, as far as who may use the bot goes. */
export interface Origin {
  platform: Platform;
  /** The channel (a thread's parent). */
  channel: string;
  user: { id: string; roles?: string[] };
  dm: boolean;
  /** The Slack workspace (team id) or Discord guild id; absent in Discord DMs. */
  workspace?: string;
}

export const REFUSED_NOTE =
  "Sorry, I only answer the people and places my operators allowed, so I did not read this. Ask an admin if you need access.";

/** How often one person is told, at most: a refused person's every message need not get an answer. */
const NOTE_EVERY_MS = 3600_000;

/**
 * The access lists of the config. Empty lists admit everyone; the terminal is always
 * admitted (whoever runs it runs the bot). People: `users` or, on Discord, `discordRoles`;
 * places: `channels` and the workspace or guild lists; direct messages follow `dm`.
 */
export class Access {
  private readonly told = new OncePer(NOTE_EVERY_MS);

  constructor(private readonly config: Config) {}

  admits(o: Origin): boolean {
    if (o.platform === "console") return true;
    const a = this.config.access;
    const listed = a.users.includes(o.user.id);
    if (o.dm) {
      if (a.dm === "off") return false;
      if (a.dm === "allowlist") return listed;
    }
    const workspaces = o.platform === "slack" ? a.slackWorkspaces : a.discordGuilds;
    if (workspaces.length > 0 && o.workspace !== undefined && !workspaces.includes(o.workspace)) return false;
    if (!o.dm && a.channels.length > 0 && !a.channels.includes(o.channel)) return false;
    const roles = o.platform === "discord" ? a.discordRoles : [];
    if (a.users.length === 0 && roles.length === 0) return true;
    return listed || roles.some((r) => o.user.roles?.includes(r));
  }

  /** Whether the refused person should be told now (once an hour each). */
  /** Whether a message is answered, or refused with the sentence (once an hour) or in silence. */
  verdict(who: Pick<Inbound, "platform" | "channel" | "user" | "from">): "yes" | "tell" | "silent" {
    const origin = originOf(who);
    if (this.admits(origin)) return "yes";
    log.info(
      { platform: who.platform, channel: who.channel, user: who.user.id },
      "message refused by the access lists",
    );
    return this.shouldTell(origin) ? "tell" : "silent";
  }

  shouldTell(o: Origin, now = Date.now()): boolean {
    return this.told.first(`${o.platform}:${o.user.id}`, now);
  }
}

/** Who wrote a message and where, as the access lists see it. */
export function originOf(inbound: Pick<Inbound, "platform" | "channel" | "user" | "from">): Origin {
  const from = inbound.from;
  return {
    platform: inbound.platform,
    channel: inbound.channel,
    user: { id: inbound.user.id, ...(from?.roles ? { roles: from.roles } : {}) },
    dm: from?.dm ?? false,
    ...(from?.workspace ? { workspace: from.workspace } : {}),
  };
}

/** Who ran a command and where, as the access lists see it. */
export function commandOrigin(cmd: Command): Origin {
  return {
    platform: cmd.platform,
    channel: cmd.channel ?? "",
    user: { id: cmd.user.id, ...(cmd.from?.roles ? { roles: cmd.from.roles } : {}) },
    dm: cmd.from?.dm ?? false,
    ...(cmd.from?.workspace ? { workspace: cmd.from.workspace } : {}),
  };
}
