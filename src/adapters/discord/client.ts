import {
  Client,
  GatewayIntentBits,
  OAuth2Scopes,
  Partials,
  PermissionFlagsBits,
  type RateLimitData,
} from "discord.js";

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
    rest: {
      ...(opts.apiUrl ? { api: opts.apiUrl } : {}),
      // @slack/socket-mode installs undici 7 as the process-wide dispatcher, which breaks
      // @discordjs/rest's own undici 6 `request` ("action is not a function" on uploads).
      // Node's fetch works with either, so discord.js gets it explicitly.
      makeRequest: (url, init) => fetch(url, init as RequestInit),
      rejectOnRateLimit,
      // A write that timed out may have landed: never repeat it blindly (the writer retries edits).
      retries: 0,
    },
  });
}

export function inviteUrl(applicationId: string): string {
  const params = new URLSearchParams({
    client_id: applicationId,
    scope: [OAuth2Scopes.Bot, OAuth2Scopes.ApplicationsCommands].join(" "),
    permissions: BOT_PERMISSIONS.toString(),
  });
  return `https://discord.com/oauth2/authorize?${params.toString()}`;
}
