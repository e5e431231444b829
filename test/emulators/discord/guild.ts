import type { DiscordEmulator } from "./index.js";
import { Intent } from "./rest.js";
import type { BotPermission, DiscordState } from "./state.js";
import { type ChannelObject, ChannelType } from "./types.js";

/** Discord's permission bits for the permissions the emulator checks on the bot. */
type Known = BotPermission | "READ_MESSAGE_HISTORY";

const BITS: Record<Known, bigint> = {
  VIEW_CHANNEL: 1n << 10n,
  SEND_MESSAGES: 1n << 11n,
  EMBED_LINKS: 1n << 14n,
  ATTACH_FILES: 1n << 15n,
  READ_MESSAGE_HISTORY: 1n << 16n,
  MANAGE_THREADS: 1n << 34n,
  CREATE_PUBLIC_THREADS: 1n << 35n,
  SEND_MESSAGES_IN_THREADS: 1n << 38n,
};

const bitsOf = (ps: Iterable<Known>) => [...ps].reduce((n, p) => n | BITS[p], 0n);

/**
 * What @everyone may do in a new Discord server, of the permissions checked here (plus
 * Use Application Commands, 1 << 31): no Manage Threads, no Administrator, so a client
 * that reads its permissions from the guild sees what the bot may really do.
 */
const EVERYONE =
  bitsOf([
    "VIEW_CHANNEL",
    "SEND_MESSAGES",
    "EMBED_LINKS",
    "ATTACH_FILES",
    "READ_MESSAGE_HISTORY",
    "CREATE_PUBLIC_THREADS",
    "SEND_MESSAGES_IN_THREADS",
  ]) |
  (1n << 31n);

/** The permissions Switchboard's invite asks for, given to its managed role (see client.ts BOT_PERMISSIONS). */
const INVITE: Known[] = [
  "VIEW_CHANNEL",
  "SEND_MESSAGES",
  "SEND_MESSAGES_IN_THREADS",
  "CREATE_PUBLIC_THREADS",
  "READ_MESSAGE_HISTORY",
  "ATTACH_FILES",
  "EMBED_LINKS",
];

function role(id: string, name: string, permissions: bigint, position: number, extra = {}) {
  return {
    id,
    name,
    permissions: permissions.toString(),
    position,
    color: 0,
    hoist: false,
    managed: false,
    mentionable: false,
    flags: 0,
    ...extra,
  };
}

/**
 * The bot's role, as Discord makes it when the bot joins: managed, named after the bot,
 * tagged with its id (discord.js's `roles.botRoleFor`), holding what its invite asked for
 * and what a test granted since (`grantBot`). People can mention it from the @ menu.
 */
export function botRoleJson(s: DiscordState): Record<string, unknown> {
  return role(s.botRoleId, s.bot.username, bitsOf([...INVITE, ...s.botGranted]), s.roles.size + 1, {
    managed: true,
    tags: { bot_id: s.bot.id },
  });
}

/** The guild's roles: @everyone (id = guild id), the roles a test defined, the bot's own. */
export function rolesJson(s: DiscordState): Record<string, unknown>[] {
  return [
    role(s.guildId, "@everyone", EVERYONE, 0),
    ...[...s.roles].map(([id, name], i) => role(id, name, 0n, i + 1)),
    botRoleJson(s),
  ];
}

/** A guild channel with what `denyBot` took from the bot's role there, as a role overwrite. */
export function channelJson(s: DiscordState, channel: ChannelObject): ChannelObject {
  const denied = s.botDenied.get(channel.id);
  if (!denied?.size || channel.type === ChannelType.PublicThread) return channel;
  return {
    ...channel,
    permission_overwrites: [{ id: s.botRoleId, type: 0, allow: "0", deny: bitsOf(denied).toString() }],
  };
}

/** Boost tiers' upload limits as multiples of an unboosted guild's (10 MiB, 10, 50, 100 MiB). */
const TIER_FACTOR = [1, 1, 5, 10];

/**
 * The largest file the bot may upload in `channelId`: a DM's is an unboosted guild's
 * (`maxFileBytes`, 10 MiB by default, smaller in tests), a guild's grows with its boosts.
 */
export function uploadLimit(s: DiscordState, channelId: string): number {
  const inGuild = s.channels.get(channelId)?.guild_id !== undefined;
  return s.maxFileBytes * (inGuild ? (TIER_FACTOR[s.premiumTier] ?? 1) : 1);
}

/** Members boost the guild to `tier` (0-3): its upload limit grows, and the bot gets GUILD_UPDATE. */
export function boostGuild(emu: DiscordEmulator, tier: 0 | 1 | 2 | 3): void {
  emu.state.premiumTier = tier;
  const { channels: _c, threads: _t, members: _m, ...guild } = guildCreate(emu.state);
  emu.dispatch("GUILD_UPDATE", guild, Intent.Guilds);
}

export function guildCreate(s: DiscordState): Record<string, unknown> {
  const guildChannels = [...s.channels.values()].filter(
    (c) => c.guild_id === s.guildId && c.type !== ChannelType.PublicThread,
  );
  const threads = [...s.channels.values()].filter((c) => c.type === ChannelType.PublicThread);
  return {
    id: s.guildId,
    name: "Emulated Guild",
    icon: null,
    owner_id: s.alice.id,
    unavailable: false,
    large: false,
    member_count: 4,
    joined_at: new Date(0).toISOString(),
    afk_timeout: 300,
    verification_level: 0,
    default_message_notifications: 0,
    explicit_content_filter: 0,
    mfa_level: 0,
    nsfw_level: 0,
    premium_tier: s.premiumTier,
    preferred_locale: "en-US",
    system_channel_flags: 0,
    features: [],
    emojis: [],
    stickers: [],
    presences: [],
    voice_states: [],
    stage_instances: [],
    guild_scheduled_events: [],
    soundboard_sounds: [],
    roles: rolesJson(s),
    members: [s.member(s.bot)],
    channels: guildChannels.map((c) => {
      const { guild_id: _g, ...rest } = channelJson(s, c);
      return rest;
    }),
    threads,
  };
}
