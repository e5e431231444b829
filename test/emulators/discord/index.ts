import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { commandInteraction } from "./command-interactions.js";
import { Gateway } from "./gateway.js";
import { botRoleJson, channelJson } from "./guild.js";
import { privateChannel } from "./installs.js";
import { RateLimiter, type RateLimitOptions } from "./ratelimit.js";
import { handleRest, Intent, PRIVILEGED_INTENTS, type RestContext, withoutContent } from "./rest.js";
import { snowflake } from "./snowflake.js";
import { type BotPermission, DiscordState, type ExtraPermission } from "./state.js";
import type {
  ChannelObject,
  RenameRecord,
  RestRecord,
  StoredAttachment,
  StoredInteraction,
  StoredMessage,
  UserObject,
} from "./types.js";
import { INTERACTION_ACK_MS, INTERACTION_TOKEN_TTL_MS } from "./webhooks.js";

export type { ModalValue } from "./modal-submit.js";
export { defaultRateLimits, type RateLimitOptions } from "./ratelimit.js";
export type {
  ChannelObject,
  ModalComponent,
  ModalField,
  OpenedModal,
  StoredAttachment,
  StoredInteraction,
  StoredMessage,
  UserObject,
} from "./types.js";
export { ChannelType } from "./types.js";
export { waitFor } from "./wait-for.js";

export interface DiscordEmulatorOptions {
  token?: string;
  /** HELLO's heartbeat interval; default 41,250 ms as on Discord. */
  heartbeatIntervalMs?: number;
  /**
   * Discord's limits (see RateLimitOptions): e.g. `{ headers: false }` answers 429s the way
   * Discord does when they come from in front of the API, without any X-RateLimit-* header,
   * and `{ threads: 50 }` lifts the hidden thread-creation limit for a load benchmark.
   */
  rateLimits?: Partial<RateLimitOptions>;
  /** Largest accepted upload in DMs and an unboosted guild; default 10 MiB, as on Discord (see guild.ts `boostGuild`). */
  maxFileBytes?: number;
  /** Interaction deadlines: `ackMs` for the initial response (3 s), `tokenTtlMs` for the token (15 min). */
  interactions?: { ackMs?: number; tokenTtlMs?: number };
  /**
   * Privileged intents enabled for the app in the Developer Portal (a bitmask of
   * GuildMembers, GuildPresences, MessageContent; default all). Identifying with one that
   * is not enabled closes the gateway with 4014; without MessageContent, REST reads of
   * messages are stripped of content like gateway events.
   */
  privilegedIntents?: number;
  /**
   * How long each REST answer takes to leave, as a network's round trip would: a client
   * that waits for one answer before its next request shows it.
   */
  latencyMs?: number;
}

export interface IncomingFile {
  filename: string;
  contentType: string;
  data: Buffer;
}

export interface MessageOptions {
  mentionsBot?: boolean;
  /** Mentions the bot's managed role, as picking "@Switchboard" from the @ menu can. */
  mentionsBotRole?: boolean;
  author?: UserObject;
  attachments?: IncomingFile[];
  /**
   * What else it carries: stickers, a poll, the message it forwards or replies to (see
   * StoredMessage), or its id. A reply pings the author it answers unless `pingReplied` is
   * false, as the switch in Discord's client does (on by default).
   */
  carries?: Pick<StoredMessage, "stickers" | "poll" | "forwarded" | "replyTo"> & {
    id?: string;
    pingReplied?: boolean;
  };
}

export type SlashOptions = Record<string, string | number | boolean>;

/**
 * Discord on 127.0.0.1: REST under `/api/v10`, the gateway at `/gateway`, attachment
 * downloads under `/attachments`. Point discord.js at it with `rest: { api: emulator.apiUrl }`.
 */
export class DiscordEmulator implements RestContext {
  /** The bot's token; `resetToken` replaces it. */
  token: string;
  readonly state: DiscordState;
  readonly limiter: RateLimiter;
  readonly maxFileBytes: number;
  readonly interactionAckMs: number;
  readonly interactionTokenTtlMs: number;
  readonly messageContentApproved: boolean;
  readonly latencyMs: number;
  readonly requests: RestRecord[] = [];
  readonly typing: { channelId: string; at: number }[] = [];
  readonly renames: RenameRecord[] = [];
  /** Routes never answered, as `"POST /channels/:id/messages/:id/threads"` (see RestContext). */
  readonly stalled = new Set<string>();
  /** Routes carried out only after this many ms, keyed as `stalled` (see RestContext). */
  readonly slow = new Map<string, number>();
  /** When true, every MESSAGE_CREATE and INTERACTION_CREATE is sent twice (overlapping sessions). */
  deliverTwice = false;
  readonly gateway: Gateway;
  private server: Server | undefined;
  private port = 0;

  private constructor(opts: DiscordEmulatorOptions) {
    this.token = opts.token ?? "emulated.discord.bot.token.0123456789";
    this.maxFileBytes = opts.maxFileBytes ?? 10 * 1024 * 1024;
    this.latencyMs = opts.latencyMs ?? 0;
    this.interactionAckMs = opts.interactions?.ackMs ?? INTERACTION_ACK_MS;
    this.interactionTokenTtlMs = opts.interactions?.tokenTtlMs ?? INTERACTION_TOKEN_TTL_MS;
    const privileged = opts.privilegedIntents ?? PRIVILEGED_INTENTS;
    this.messageContentApproved = (privileged & Intent.MessageContent) !== 0;
    this.limiter = new RateLimiter(opts.rateLimits);
    this.state = new DiscordState(() => this.url);
    this.state.maxFileBytes = this.maxFileBytes;
    this.gateway = new Gateway(
      (token) =>
        token === this.token
          ? {
              intents: 0,
              disallowedIntents: PRIVILEGED_INTENTS & ~privileged,
              ready: (sessionId) => ({
                ready: this.state.readyPayload(sessionId, this.gatewayUrl()),
                guilds: [this.state.guildCreate()],
              }),
            }
          : null,
      opts.heartbeatIntervalMs ?? 41_250,
      // What each session receives depends on its intents: message events lose their
      // content without MessageContent (DMs, the bot's own messages and mentions of it excepted).
      (t, d, intents) =>
        (t === "MESSAGE_CREATE" || t === "MESSAGE_UPDATE") && (intents & Intent.MessageContent) === 0
          ? withoutContent(d as Record<string, unknown>, this.state.bot.id)
          : d,
    );
  }

  static async start(opts: DiscordEmulatorOptions = {}): Promise<DiscordEmulator> {
    const emulator = new DiscordEmulator(opts);
    const server = createServer((req, res) => void handleRest(emulator, req, res));
    server.on("upgrade", (req, socket, head) => {
      if ((req.url ?? "").startsWith("/gateway")) emulator.gateway.handleUpgrade(req, socket, head);
      else socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    emulator.server = server;
    emulator.port = (server.address() as AddressInfo).port;
    return emulator;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The value for discord.js `rest.api` (and `DISCORD_API_URL`). */
  get apiUrl(): string {
    return `${this.url}/api`;
  }

  gatewayUrl(): string {
    return `ws://127.0.0.1:${this.port}/gateway`;
  }

  get bot(): UserObject {
    return this.state.bot;
  }

  get guildId(): string {
    return this.state.guildId;
  }

  dispatch(t: string, d: unknown, intent?: number): void {
    this.gateway.dispatch(t, d, intent);
  }

  /**
   * A server admin takes `permissions` from the bot's role in guild channel `channelId`
   * (its threads inherit them): its writes there get 403 Missing Permissions, as on Discord;
   * without VIEW_CHANNEL every request there gets 403 Missing Access (see permissions.ts).
   */
  denyBot(channelId: string, ...permissions: BotPermission[]): void {
    const denied = this.state.botDenied.get(channelId) ?? new Set();
    for (const p of permissions) denied.add(p);
    this.state.botDenied.set(channelId, denied);
    // As an overwrite on the bot's role, which the bot sees (discord.js `permissionsFor`).
    const channel = this.state.channels.get(channelId);
    if (channel) this.dispatch("CHANNEL_UPDATE", channelJson(this.state, channel), Intent.Guilds);
  }

  /**
   * A server admin gives the bot's role, guild-wide, a permission Switchboard's invite does
   * not ask for (Manage Threads: deleting threads, locking them, reopening locked ones).
   * `denyBot` still takes it away in one channel.
   */
  grantBot(...permissions: ExtraPermission[]): void {
    for (const p of permissions) this.state.botGranted.add(p);
    const role = botRoleJson(this.state);
    this.dispatch("GUILD_ROLE_UPDATE", { guild_id: this.guildId, role }, Intent.Guilds);
  }

  /** A person writes in a guild channel or thread; returns the stored message. */
  userMessage(channelId: string, text: string, opts: MessageOptions = {}): StoredMessage {
    const s = this.state;
    const channel = s.channels.get(channelId);
    if (!channel) throw new Error(`No channel ${channelId}`);
    const author = opts.author ?? s.alice;
    const content = opts.mentionsBotRole
      ? `<@&${s.botRoleId}> ${text}`
      : opts.mentionsBot
        ? `<@${s.bot.id}> ${text}`
        : text;
    const { pingReplied, ...carries } = opts.carries ?? {};
    const replied = carries.replyTo ? s.findMessage(carries.replyTo) : undefined;
    const pinged =
      replied && pingReplied !== false && replied.author.id !== author.id ? [replied.author.id] : [];
    // As on Discord, every <@id> in the content is a mention, and so is a reply's ping.
    const mentioned = new Set([...[...content.matchAll(/<@!?(\d+)>/g)].map((m) => m[1] ?? ""), ...pinged]);
    const msg = s.addMessage({
      channelId,
      guildId: channel.guild_id,
      author,
      content,
      attachments: (opts.attachments ?? []).map((f) => this.storeFile(channelId, f)),
      ...carries,
      mentions: [...mentioned].map((id) => s.users.get(id)).filter((u): u is UserObject => u !== undefined),
    });
    const json = s.messageJson(msg);
    if (channel.guild_id) {
      json.mentions = msg.mentions.map((u) => ({ ...u, member: s.member(u) }));
    }
    const intent = channel.guild_id ? Intent.GuildMessages : Intent.DirectMessages;
    if (!s.withoutBot.has(channelId)) this.twice(() => this.dispatch("MESSAGE_CREATE", json, intent));
    return msg;
  }

  /**
   * A group DM of `members`, where the app can be used only through a user install: the
   * bot is no member (no events, 403 Missing Access to its requests), and its commands
   * there come from the private-channel context, authorized by the user install alone.
   */
  privateChannel(...members: UserObject[]): ChannelObject {
    return privateChannel(this.state, members);
  }

  /** A person writes to the bot in a DM. */
  dm(
    userId: string,
    text: string,
    opts: Omit<MessageOptions, "mentionsBot" | "mentionsBotRole"> = {},
  ): StoredMessage {
    const author = this.state.users.get(userId);
    if (!author) throw new Error(`No user ${userId}`);
    const channel = this.state.dmChannel(userId);
    return this.userMessage(channel.id, text, { ...opts, author });
  }

  /** A thread someone else started earlier, with its messages (sent before the bot looks). */
  existingThread(
    parentId: string,
    name: string,
    messages: { author: UserObject; content: string }[],
  ): ChannelObject {
    const s = this.state;
    const thread = s.addThread(parentId, name, messages[0]?.author.id ?? s.alice.id);
    for (const m of messages) {
      s.addMessage({
        channelId: thread.id,
        guildId: s.guildId,
        author: m.author,
        content: m.content,
        attachments: [],
        mentions: [],
      });
    }
    this.dispatch("THREAD_CREATE", { ...thread, newly_created: true }, Intent.Guilds);
    return thread;
  }

  /** A person runs a slash command; returns the interaction record the bot's callbacks fill in. */
  slash(name: string, options: SlashOptions, channelId: string, userId: string): StoredInteraction {
    return commandInteraction(this, { type: 2, name, options, channelId, userId });
  }

  /** A person types into an option with autocomplete; the bot's choices land in `.choices`. */
  autocomplete(
    name: string,
    options: SlashOptions,
    focused: string,
    channelId: string,
    userId: string,
  ): StoredInteraction {
    return commandInteraction(this, { type: 4, name, options, channelId, userId, focused });
  }

  /**
   * Closes the gateway socket (code 4000) so discord.js resumes. With `hold`, resumes are
   * refused until `release()`, so events sent meanwhile are replayed on RESUME.
   */
  dropConnection(opts: { replayDelivered?: number; hold?: boolean } = {}): void {
    if (opts.hold) this.gateway.hold(true);
    this.gateway.drop(opts);
  }

  release(): void {
    this.gateway.hold(false);
  }

  /**
   * The next RESUME of each session replays, besides what it missed, the last `count` events
   * its bot had acknowledged: what a session's resume point kept a little behind shows.
   */
  rewindResumes(count: number): void {
    this.gateway.rewind(count);
  }

  /**
   * Someone resets the bot's token in the Developer Portal: the old one is refused from now
   * on, by REST (401) and by the gateway (a RESUME is invalid, an IDENTIFY closed with 4004).
   */
  resetToken(): void {
    this.token = `emulated.discord.bot.token.${snowflake()}`;
  }

  /** The next `count` edits (all when omitted), of message `messageId` only when given, answer 429 with this retry_after. */
  rateLimitEdits(retryAfterMs: number, count?: number, messageId?: string): void {
    this.limiter.force("edit", retryAfterMs, count, messageId);
  }

  /** Live (not deleted) messages of a channel, oldest first, ephemeral ones included. */
  messages(channelId: string): StoredMessage[] {
    return (this.state.messages.get(channelId) ?? []).filter((m) => !m.deleted);
  }

  botMessages(channelId: string): StoredMessage[] {
    return this.messages(channelId).filter((m) => m.author.id === this.state.bot.id);
  }

  threads(parentId?: string): ChannelObject[] {
    return [...this.state.channels.values()].filter(
      (c) => c.type === 11 && (parentId === undefined || c.parent_id === parentId),
    );
  }

  channel(id: string): ChannelObject | undefined {
    return this.state.channels.get(id);
  }

  async stop(): Promise<void> {
    this.gateway.close();
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private twice(send: () => void): void {
    send();
    if (this.deliverTwice) send();
  }

  private storeFile(channelId: string, f: IncomingFile): StoredAttachment {
    return this.state.storeFile(channelId, f);
  }
}
