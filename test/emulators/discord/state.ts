import { guildCreate } from "./guild.js";
import type { IncomingFile } from "./index.js";
import type { Installs } from "./installs.js";
import { snowflake } from "./snowflake.js";
import {
  type ChannelObject,
  ChannelType,
  type StoredAttachment,
  type StoredInteraction,
  type StoredMessage,
  type UserObject,
} from "./types.js";

/** Everything allowed: Discord sends permissions as a decimal string of a 53-bit field. */
export const ALL_PERMISSIONS = ((1n << 51n) - 1n).toString();

function user(id: string, username: string, bot = false): UserObject {
  return {
    id,
    username,
    global_name: bot ? null : username,
    discriminator: "0",
    avatar: null,
    ...(bot ? { bot } : {}),
  };
}

/**
 * The emulated world: one guild with a text channel, a second text channel and a forum,
 * the bot, two people, another bot, DM channels, and every message written, with edits.
 */
const NONCE_WINDOW_MS = 5 * 60_000;

/** The permissions the emulator checks on the bot's writes. */
export type BotPermission =
  | "VIEW_CHANNEL"
  | "SEND_MESSAGES"
  | "SEND_MESSAGES_IN_THREADS"
  | "CREATE_PUBLIC_THREADS"
  | "ATTACH_FILES"
  | "EMBED_LINKS"
  | "MANAGE_THREADS";

/** Permissions beyond those Switchboard's invite asks for, which a server admin may give the bot's role. */
export type ExtraPermission = "MANAGE_THREADS";

export class DiscordState {
  readonly bot = user(snowflake(), "Switchboard", true);
  readonly alice = user(snowflake(), "alice");
  readonly bob = user(snowflake(), "bob");
  readonly otherBot = user(snowflake(), "otherbot", true);
  readonly guildId = snowflake();
  /** The bot's managed role (see guild.ts `botRoleJson`). */
  readonly botRoleId = snowflake();
  /** The guild's boost tier (0-3): its upload limit grows with it (see guild.ts `uploadLimit`). */
  premiumTier = 0;
  /** An unboosted guild's upload limit, and a DM's. */
  maxFileBytes = 10 * 1024 * 1024;
  readonly general: string;
  readonly random: string;
  readonly forum: string;
  readonly channels = new Map<string, ChannelObject>();
  readonly messages = new Map<string, StoredMessage[]>();
  readonly users = new Map<string, UserObject>();
  readonly interactions = new Map<string, StoredInteraction>();
  readonly commands = {
    global: [] as Record<string, unknown>[],
    guild: new Map<string, Record<string, unknown>[]>(),
  };
  /** Upload contents served back at attachment URLs. */
  readonly files = new Map<string, StoredAttachment>();
  /** Permissions the bot's role lacks in a guild channel (its threads inherit them), by channel id. */
  readonly botDenied = new Map<string, Set<BotPermission>>();
  /** Permissions granted to the bot's role guild-wide beyond its invite's (see `grantBot`). */
  readonly botGranted = new Set<ExtraPermission>();
  /** People who take no DMs from the guild's members (the bot among them), or blocked the bot. */
  readonly dmsClosed = new Set<string>();
  /** People who left the guild: they share none with the bot. */
  readonly outsiders = new Set<string>();
  /** Private channels the app is used in without its bot (see installs.ts `privateChannel`). */
  readonly withoutBot = new Set<string>();
  /** Where the app is installed: to the guild only, as Switchboard's invite does, unless a test says otherwise. */
  installs: Installs = { guild: true, user: false };

  constructor(private readonly baseUrl: () => string) {
    for (const u of [this.bot, this.alice, this.bob, this.otherBot]) this.users.set(u.id, u);
    this.general = this.addChannel({ type: ChannelType.GuildText, name: "general" }).id;
    this.random = this.addChannel({ type: ChannelType.GuildText, name: "random" }).id;
    this.forum = this.addChannel({ type: ChannelType.GuildForum, name: "help-forum" }).id;
  }

  get applicationId(): string {
    return this.bot.id;
  }

  addChannel(fields: Partial<ChannelObject> & { type: number }): ChannelObject {
    const channel: ChannelObject = {
      id: snowflake(),
      guild_id: this.guildId,
      parent_id: null,
      position: this.channels.size,
      permission_overwrites: [],
      last_message_id: null,
      flags: 0,
      ...fields,
    };
    this.channels.set(channel.id, channel);
    this.messages.set(channel.id, []);
    return channel;
  }

  /** A public thread; `id` is the starter message id when started from a message, as on Discord. */
  addThread(parentId: string, name: string, ownerId: string, id = snowflake()): ChannelObject {
    const thread: ChannelObject = {
      id,
      type: ChannelType.PublicThread,
      guild_id: this.guildId,
      parent_id: parentId,
      owner_id: ownerId,
      name,
      last_message_id: null,
      message_count: 0,
      member_count: 1,
      flags: 0,
      thread_metadata: {
        archived: false,
        auto_archive_duration: 1440,
        archive_timestamp: new Date().toISOString(),
        locked: false,
      },
    };
    this.channels.set(thread.id, thread);
    this.messages.set(thread.id, []);
    return thread;
  }

  dmChannel(userId: string): ChannelObject {
    for (const c of this.channels.values()) {
      if (c.type === ChannelType.DM && c.recipients?.[0]?.id === userId) return c;
    }
    const recipient = this.users.get(userId);
    if (!recipient) throw new Error(`No user ${userId}`);
    const channel: ChannelObject = {
      id: snowflake(),
      type: ChannelType.DM,
      recipients: [recipient],
      last_message_id: null,
    };
    this.channels.set(channel.id, channel);
    this.messages.set(channel.id, []);
    return channel;
  }

  addMessage(
    m: Omit<StoredMessage, "id" | "edits" | "createdAt" | "editedAt" | "flags"> & {
      flags?: number;
      id?: string;
    },
  ): StoredMessage {
    const stored: StoredMessage = {
      id: snowflake(),
      edits: [],
      createdAt: Date.now(),
      editedAt: null,
      flags: 0,
      ...m,
    };
    const list = this.messages.get(m.channelId);
    if (!list) throw new Error(`No channel ${m.channelId}`);
    list.push(stored);
    const channel = this.channels.get(m.channelId);
    if (channel) {
      channel.last_message_id = stored.id;
      if (channel.message_count !== undefined) channel.message_count += 1;
    }
    return stored;
  }

  findMessage(id: string): StoredMessage | undefined {
    for (const list of this.messages.values()) {
      const m = list.find((x) => x.id === id);
      if (m) return m;
    }
    return undefined;
  }

  attachmentUrl(channelId: string, id: string, filename: string): string {
    return `${this.baseUrl()}/attachments/${channelId}/${id}/${encodeURIComponent(filename)}`;
  }

  /** Keeps an uploaded file, served from its CDN-like URL under `channelId`. */
  storeFile(channelId: string, f: IncomingFile): StoredAttachment {
    const id = snowflake();
    const a: StoredAttachment = {
      id,
      filename: f.filename,
      size: f.data.length,
      contentType: f.contentType,
      data: f.data,
      url: this.attachmentUrl(channelId, id, f.filename),
    };
    this.files.set(id, a);
    return a;
  }

  /** Guild roles besides @everyone (id -> name), sent with GUILD_CREATE: define them before the bot connects. */
  readonly roles = new Map<string, string>();
  /** Each member's role ids. */
  readonly memberRoles = new Map<string, string[]>();

  defineRole(id: string, name = id): void {
    this.roles.set(id, name);
  }

  /** Gives a member roles (defined with `defineRole`); their next messages and clicks carry them. */
  setRoles(userId: string, roles: string[]): void {
    const unknown = roles.filter((r) => !this.roles.has(r));
    if (unknown.length) throw new Error(`emulator: undefined roles ${unknown.join(", ")}`);
    this.memberRoles.set(userId, roles);
  }

  member(u: UserObject): Record<string, unknown> {
    const roles = this.rolesOf(u.id);
    return { user: u, roles, joined_at: new Date(0).toISOString(), deaf: false, mute: false, flags: 0 };
  }

  private rolesOf(userId: string): string[] {
    const roles = this.memberRoles.get(userId) ?? [];
    return userId === this.bot.id ? [...roles, this.botRoleId] : roles;
  }

  /**
   * Moves an interaction `ms` into the past, as if that long had gone by since Discord sent
   * it: its deadlines (the 3 s to respond, the token's 15 minutes) count from then.
   */
  ageInteraction(id: string, ms: number): void {
    const i = this.interactions.get(id);
    if (!i) throw new Error(`No interaction ${id}`);
    i.sentAt -= ms;
  }

  /**
   * The bot's message created with `nonce` in the channel within the nonce window
   * ("the past few minutes" in Discord's docs: 5 here), if any.
   */
  byNonce(channelId: string, nonce: string): StoredMessage | undefined {
    const since = Date.now() - NONCE_WINDOW_MS;
    return this.messages
      .get(channelId)
      ?.find((m) => m.nonce === nonce && m.author.id === this.bot.id && m.createdAt >= since);
  }

  messageJson(m: StoredMessage): Record<string, unknown> {
    const json: Record<string, unknown> = {
      id: m.id,
      channel_id: m.channelId,
      author: m.author,
      content: m.content,
      timestamp: new Date(m.createdAt).toISOString(),
      edited_timestamp: m.editedAt === null ? null : new Date(m.editedAt).toISOString(),
      tts: false,
      mention_everyone: false,
      mentions: m.mentions,
      // Every <@&id> of a role the guild has is a role mention, as on Discord.
      mention_roles: [...m.content.matchAll(/<@&(\d+)>/g)]
        .map((r) => r[1] ?? "")
        .filter((id) => this.roles.has(id) || id === this.botRoleId),
      attachments: m.attachments.map((a) => ({
        id: a.id,
        filename: a.filename,
        size: a.size,
        url: a.url,
        proxy_url: a.url,
        content_type: a.contentType,
      })),
      embeds: m.embeds ?? [],
      pinned: false,
      // 19: a reply, with the message it answers.
      type: m.replyTo ? 19 : 0,
      flags: m.flags,
      components: m.components ?? [],
    };
    if (m.replyTo) {
      json.message_reference = {
        type: 0,
        message_id: m.replyTo,
        channel_id: m.channelId,
        ...(m.guildId ? { guild_id: m.guildId } : {}),
      };
      // Discord sends the message replied to along (without its own reply), null once it is deleted.
      const replied = this.findMessage(m.replyTo);
      json.referenced_message =
        replied && !replied.deleted ? this.messageJson({ ...replied, replyTo: undefined }) : null;
    }
    if (m.stickers)
      json.sticker_items = m.stickers.map((name) => ({ id: snowflake(), name, format_type: 1 }));
    if (m.poll) json.poll = pollJson(m.poll, m.createdAt);
    if (m.forwarded) {
      Object.assign(json, forwardJson(this.messageJson(m.forwarded)));
      // 16384: HAS_SNAPSHOT.
      json.flags = m.flags | 16384;
    }
    // Gateway MESSAGE_CREATE carries channel_type; discord.js needs it to build an uncached DM channel.
    const channelType = this.channels.get(m.channelId)?.type;
    if (channelType !== undefined) json.channel_type = channelType;
    if (m.guildId) {
      json.guild_id = m.guildId;
      const roles = this.rolesOf(m.author.id);
      json.member = { roles, joined_at: new Date(0).toISOString(), deaf: false, mute: false, flags: 0 };
    }
    if (m.author.id === this.bot.id && m.interactionId) json.webhook_id = this.applicationId;
    return json;
  }

  guildCreate(): Record<string, unknown> {
    return guildCreate(this);
  }

  readyPayload(sessionId: string, gatewayUrl: string): Record<string, unknown> {
    return {
      v: 10,
      user: { ...this.bot, verified: true, mfa_enabled: false, flags: 0 },
      session_id: sessionId,
      resume_gateway_url: gatewayUrl,
      guilds: [{ id: this.guildId, unavailable: true }],
      application: { id: this.applicationId, flags: 0 },
      private_channels: [],
      relationships: [],
      shard: [0, 1],
    };
  }
}

function pollJson(poll: NonNullable<StoredMessage["poll"]>, createdAt: number): Record<string, unknown> {
  return {
    question: { text: poll.question },
    answers: poll.answers.map((text, i) => ({ answer_id: i + 1, poll_media: { text } })),
    expiry: new Date(createdAt + 24 * 3600_000).toISOString(),
    allow_multiselect: false,
    layout_type: 1,
  };
}

/** A forward's reference (type 1) and snapshot: the fields Discord keeps of the original, no author. */
function forwardJson(original: Record<string, unknown>): Record<string, unknown> {
  const kept = ["type", "content", "embeds", "attachments", "timestamp", "edited_timestamp", "flags"];
  const message = Object.fromEntries(kept.map((k) => [k, original[k]]));
  return {
    message_reference: {
      type: 1,
      message_id: original.id,
      channel_id: original.channel_id,
      ...(original.guild_id ? { guild_id: original.guild_id } : {}),
    },
    message_snapshots: [
      { message: { ...message, mentions: [], mention_roles: [], sticker_items: [], components: [] } },
    ],
  };
}
