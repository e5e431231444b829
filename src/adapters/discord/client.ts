import {
  Client,
  GatewayCloseCodes,
  GatewayIntentBits,
  OAuth2Scopes,
  Partials,
  PermissionFlagsBits,
  type RateLimitData,
} from "discord.js";
import type { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { scheduledFetch } from "./write-policy.js";

/** What the bot does in a channel: read, answer, open threads and write in them, attach files. */
export const BOT_PERMISSIONS =
  PermissionFlagsBits.ViewChannel |
  PermissionFlagsBits.SendMessages |
  PermissionFlagsBits.SendMessagesInThreads |
  PermissionFlagsBits.CreatePublicThreads |
  PermissionFlagsBits.ReadMessageHistory |
  PermissionFlagsBits.AttachFiles |
  PermissionFlagsBits.EmbedLinks;

export interface ClientOptions {
  /** REST base (DISCORD_API_URL), e.g. an emulator's `http://127.0.0.1:PORT/api`. */
  apiUrl?: string;
  /** The bot's write scheduler: every REST call goes through it. */
  scheduler?: WriteScheduler;
  /** This process's gateway shard (see config `discord.shard`); one shard when not given. */
  shard?: { id: number; count: number };
}

/**
 * Which 429s surface as errors instead of being waited out inside @discordjs/rest: the
 * writes the reply writer paces and retries itself (message sends and edits, interaction
 * webhook writes), renames (a third rename would hang ~10 min) and typing. Everything
 * else, and any global limit, is waited out: a thread must still be opened, a command
 * still registered.
 */
export function rejectOnRateLimit(data: RateLimitData): boolean {
  if (data.global) return false;
  const { route, method } = data;
  if (route === "/channels/:id/messages" || route === "/channels/:id/messages/:id") return method !== "GET";
  if (route === "/channels/:id") return method === "PATCH";
  if (route === "/channels/:id/typing") return true;
  return route.startsWith("/webhooks/") && method !== "GET";
}

export function createClient(opts: ClientOptions = {}): Client {
  return new Client({
    intents: [
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildMessages,
      GatewayIntentBits.DirectMessages,
      // Privileged: without it guild messages arrive with empty content unless they mention the bot.
      GatewayIntentBits.MessageContent,
    ],
    // DM channels are not cached until their first message arrives.
    partials: [Partials.Channel],
    ...(opts.shard ? { shards: [opts.shard.id], shardCount: opts.shard.count } : {}),
    rest: {
      ...(opts.apiUrl ? { api: opts.apiUrl } : {}),
      // @slack/socket-mode installs undici 7 as the process-wide dispatcher, which breaks
      // @discordjs/rest's own undici 6 `request` ("action is not a function" on uploads).
      // Node's fetch works with either, so discord.js gets it explicitly, through the
      // bot's write scheduler when there is one.
      makeRequest: opts.scheduler
        ? (url, init) => scheduledFetch(opts.scheduler!)(url, init as RequestInit)
        : (url, init) => fetch(url, init as RequestInit),
      // The scheduler keeps the bot under Discord's 50 requests per second, in the order of
      // what matters most; discord.js's own first-come limiter would count requests still
      // waiting there as sent, and hold back the urgent ones behind them.
      ...(opts.scheduler ? { globalRequestsPerSecond: 1_000 } : {}),
      rejectOnRateLimit,
      // A write that timed out may have landed: never repeat it blindly (the writer retries edits).
      retries: 0,
    },
  });
}

/**
 * What to do about a close of the gateway discord.js will not reconnect after (it emits
 * ShardDisconnect only for these): the bot stays up but deaf until someone acts.
 */
const CLOSED_FOR_GOOD: Partial<Record<number, string>> = {
  [GatewayCloseCodes.AuthenticationFailed]:
    "authentication failed): the token was refused. Set DISCORD_TOKEN to the bot's current token and restart",
  [GatewayCloseCodes.InvalidShard]:
    "invalid shard): check discord.shard (an id from 0 to count - 1, the same count on every replica) and restart",
  [GatewayCloseCodes.ShardingRequired]:
    "sharding required): the bot is in too many servers for one connection. Set discord.shard on each replica and restart",
  [GatewayCloseCodes.InvalidAPIVersion]:
    "invalid API version): this discord.js speaks a gateway version Discord no longer takes. Update the bot and restart",
  [GatewayCloseCodes.InvalidIntents]:
    "invalid intents): the bot asked for intents Discord does not know. Update the bot and restart",
  [GatewayCloseCodes.DisallowedIntents]:
    "disallowed intents): turn on the Message Content Intent on the Bot page of the Developer Portal and restart",
};

/** The log line for a gateway close Discord will not take the bot back after. */
export function closedForGood(code: number): string {
  const what =
    CLOSED_FOR_GOOD[code] ?? "a close discord.js does not recover from): see the log above and restart";
  return `Discord closed the gateway and will not take the bot back (${code}, ${what}; until then no message or command reaches the bot.`;
}

export function inviteUrl(applicationId: string): string {
  const params = new URLSearchParams({
    client_id: applicationId,
    scope: [OAuth2Scopes.Bot, OAuth2Scopes.ApplicationsCommands].join(" "),
    permissions: BOT_PERMISSIONS.toString(),
  });
  return `https://discord.com/oauth2/authorize?${params.toString()}`;
}

/** The private part of discord.js's gateway manager: its flag, and the @discordjs/ws manager under it. */
interface GatewayInternals {
  destroyed: boolean;
  _ws?: { destroy(options: { code: number; reason: string }): Promise<void> } | null;
}

/**
 * Shuts the client's gateway sockets as a dropped connection would (4000), not as a log-out:
 * Discord then keeps each session, and what it sent after the last event read, for the
 * process that resumes it. discord.js's own destroy closes with 1000, which ends them; it
 * passes over sockets shut here, as its flag says they are (two closes of one socket at
 * once leave one of them waiting for ever).
 */
export async function closeResumably(client: Client): Promise<void> {
  const manager = client.ws as unknown as GatewayInternals;
  if (manager.destroyed || !manager._ws) return;
  manager.destroyed = true;
  await manager._ws.destroy({ code: 4000, reason: "Switchboard is stopping" });
}
