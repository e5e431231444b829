import type { IncomingMessage, ServerResponse } from "node:http";
import { type ParsedBody, parseBody, readRaw } from "./body.js";
import { nonceOf, writeMessage } from "./message-writes.js";
import { mayAttach, mayChange, mayMessage, mayView, mayWrite, reopenToPost } from "./permissions.js";
import type { RateLimiter } from "./ratelimit.js";
import { snowflake } from "./snowflake.js";
import type { DiscordState } from "./state.js";
import { deleteChannel, modifyChannel, startThread } from "./thread-routes.js";
import type { RenameRecord, RestRecord, StoredMessage } from "./types.js";
import { handleInteractionRoute } from "./webhooks.js";

/** What the REST routes need from the emulator. */
export interface RestContext {
  state: DiscordState;
  limiter: RateLimiter;
  token: string;
  /** Deadline for an interaction's initial response (Discord: 3 s). */
  interactionAckMs: number;
  /** How long an interaction token takes follow-ups and webhook edits (Discord: 15 min). */
  interactionTokenTtlMs: number;
  /** Whether the app's Message Content intent is enabled in the Developer Portal (REST reads). */
  messageContentApproved: boolean;
  /** Added to every REST answer (see DiscordEmulatorOptions.latencyMs). */
  latencyMs: number;
  gatewayUrl(): string;
  dispatch(t: string, d: unknown, intent?: number): void;
  requests: RestRecord[];
  typing: { channelId: string; at: number }[];
  renames: RenameRecord[];
  /**
   * Routes Discord takes a request for and never answers (a stalled Discord), by method and
   * path with every id as `:id`: nothing is done for them, and the connection stays open
   * until the client gives up or the emulator stops.
   */
  stalled: ReadonlySet<string>;
  /**
   * Routes Discord takes this many ms to carry a request out for, keyed as `stalled`: it
   * acts then, and answers then unless the route is stalled too (the answer lost on its way
   * back). A client that gave up meanwhile never sees the answer, but what it asked for is done.
   */
  slow: ReadonlyMap<string, number>;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(String(body.message));
  }
}

export const Intent = {
  Guilds: 1,
  GuildMembers: 1 << 1,
  GuildPresences: 1 << 8,
  GuildMessages: 1 << 9,
  DirectMessages: 1 << 12,
  /** Privileged: without it, guild messages that do not mention the app arrive without content. */
  MessageContent: 1 << 15,
} as const;

/** Intents an app must have enabled in the Developer Portal before it may identify with them. */
export const PRIVILEGED_INTENTS = Intent.GuildMembers | Intent.GuildPresences | Intent.MessageContent;

/**
 * A message as an app without the Message Content intent sees it: in guilds, messages
 * that neither come from the app nor mention it have empty `content`, `embeds`,
 * `attachments` and `components`. DMs keep everything.
 */
export function withoutContent(message: Record<string, unknown>, botId: string): Record<string, unknown> {
  if (!message.guild_id) return message;
  if ((message.author as { id?: string } | undefined)?.id === botId) return message;
  const mentions = Array.isArray(message.mentions) ? (message.mentions as { id?: string }[]) : [];
  if (mentions.some((u) => u?.id === botId)) return message;
  return { ...message, content: "", embeds: [], attachments: [], components: [] };
}

export function invalidForm(field: string, code: string, message: string): HttpError {
  return new HttpError(400, {
    code: 50035,
    message: "Invalid Form Body",
    errors: { [field]: { _errors: [{ code, message }] } },
  });
}

/**
 * A 429 as Discord sends it. `scope` is `user` for per-route buckets, `shared` for limits
 * on a resource (thread creation) and `global` for the bot-wide limit, whose body says
 * `global: true` and whose headers carry `X-RateLimit-Global`.
 */
export function tooManyRequests(
  retryAfterMs: number,
  headers: Record<string, string>,
  scope: "user" | "shared" | "global" = "user",
): Reply {
  const seconds = retryAfterMs / 1000;
  const global = scope === "global";
  return {
    status: 429,
    // Discord sends whole seconds in Retry-After; fractions keep sped-up tests fast and discord.js reads them.
    headers: {
      ...headers,
      "retry-after": seconds.toFixed(3),
      "x-ratelimit-scope": scope,
      ...(global ? { "x-ratelimit-global": "true" } : {}),
    },
    body: { message: "You are being rate limited.", retry_after: seconds, global },
  };
}

export async function handleRest(ctx: RestContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://127.0.0.1");
  const method = req.method ?? "GET";
  const arrived = Date.now();
  const file = /^\/attachments\/\d+\/(\d+)\//.exec(url.pathname);
  if (file && method === "GET") {
    const a = ctx.state.files.get(file[1] ?? "");
    ctx.requests.push({ method, path: url.pathname, status: a ? 200 : 404, arrived, at: Date.now() });
    res.writeHead(a ? 200 : 404, { "content-type": a?.contentType ?? "text/plain" });
    res.end(a?.data ?? "Not found");
    return;
  }
  let reply: Reply;
  try {
    const raw = await readRaw(req);
    const routeKey = `${method} ${url.pathname.replace(/^\/api\/v10/, "").replace(/\d{6,}/g, ":id")}`;
    const late = ctx.slow.get(routeKey);
    if (late !== undefined) await new Promise((r) => setTimeout(r, late));
    if (ctx.stalled.has(routeKey)) {
      if (late !== undefined) await route(ctx, req, method, url, raw).catch(() => undefined);
      return;
    }
    reply = await route(ctx, req, method, url, raw);
  } catch (err) {
    reply =
      err instanceof HttpError
        ? { status: err.status, body: err.body }
        : { status: 500, body: { message: String(err), code: 0 } };
  }
  if (ctx.latencyMs > 0) await new Promise((r) => setTimeout(r, ctx.latencyMs));
  ctx.requests.push({ method, path: url.pathname, status: reply.status, arrived, at: Date.now() });
  // One place strips the rate-limit headers in the headerless mode, so no route can leak one.
  const headers = ctx.limiter.visible({ ...(reply.headers ?? {}) });
  if (reply.body !== undefined) headers["content-type"] = "application/json";
  res.writeHead(reply.status, headers);
  res.end(reply.body === undefined ? undefined : JSON.stringify(reply.body));
}

async function route(
  ctx: RestContext,
  req: IncomingMessage,
  method: string,
  url: URL,
  raw: Buffer,
): Promise<Reply> {
  const path = url.pathname;
  const api = /^\/api\/v10(\/.*)$/.exec(path);
  if (!api?.[1]) throw new HttpError(404, { message: "404: Not Found", code: 0 });
  // @discordjs/rest encodes `@me` and `@original` as `%40me`, `%40original`.
  const p = api[1].replace(/%40/gi, "@");
  const parsed = (): Promise<ParsedBody> => parseBody(req, raw);
  const interaction = await handleInteractionRoute(ctx, method, p, parsed, url);
  if (interaction) return interaction;

  if (req.headers.authorization !== `Bot ${ctx.token}`) {
    throw new HttpError(401, { message: "401: Unauthorized", code: 0 });
  }
  // Every request with the bot token draws on the global budget; interaction routes (above) do not.
  const global = ctx.limiter.takeGlobal(p);
  if (!global.ok) return tooManyRequests(global.retryAfterMs, global.headers, "global");
  const s = ctx.state;
  if (method === "GET" && p === "/gateway/bot") {
    return {
      status: 200,
      body: {
        url: ctx.gatewayUrl(),
        shards: 1,
        session_start_limit: { total: 1000, remaining: 999, reset_after: 14_400_000, max_concurrency: 1 },
      },
    };
  }
  if (method === "GET" && p === "/users/@me") return { status: 200, body: s.bot };
  if (method === "GET" && p === "/applications/@me") {
    return { status: 200, body: { id: s.applicationId, name: s.bot.username, flags: 0, bot: s.bot } };
  }
  if (method === "POST" && p === "/users/@me/channels") {
    const { json } = await parsed();
    return { status: 200, body: s.dmChannel(String(json.recipient_id)) };
  }
  const commands = /^\/applications\/(\d+)(?:\/guilds\/(\d+))?\/commands$/.exec(p);
  if (commands) return registerCommands(ctx, method, commands[2], await parsed());

  const m = /^\/channels\/(\d+)(\/.*)?$/.exec(p);
  if (!m?.[1]) throw new HttpError(404, { message: "404: Not Found", code: 0 });
  const channel = s.channels.get(m[1]);
  if (!channel) throw new HttpError(404, { message: "Unknown Channel", code: 10003 });
  mayView(s, channel);
  const rest = m[2] ?? "";
  if (rest === "" && method === "GET") return { status: 200, body: channel };
  if (rest === "" && method === "PATCH") return modifyChannel(ctx, channel, (await parsed()).json);
  if (rest === "" && method === "DELETE") return deleteChannel(ctx, channel);
  if (rest === "/typing" && method === "POST") {
    mayWrite(s, channel);
    ctx.typing.push({ channelId: channel.id, at: Date.now() });
    return { status: 204 };
  }
  if (rest === "/messages" && method === "GET") {
    return { status: 200, body: history(s, channel.id, url).map((m) => readable(ctx, m)) };
  }
  if (rest === "/messages" && method === "POST") {
    mayWrite(s, channel);
    mayMessage(s, channel);
    reopenToPost(ctx, channel);
    const verdict = ctx.limiter.take(`messages:${channel.id}`, "post", p);
    if (!verdict.ok) return tooManyRequests(verdict.retryAfterMs, verdict.headers);
    const body = await parsed();
    mayAttach(s, channel, body);
    const nonce = nonceOf(body.json);
    // enforce_nonce: the message this author already created with the nonce comes back, and none is created.
    const earlier =
      nonce !== undefined && body.json.enforce_nonce === true ? s.byNonce(channel.id, nonce) : undefined;
    const msg = earlier ?? writeMessage(ctx, channel.id, body, undefined, { ...(nonce ? { nonce } : {}) });
    return {
      status: 200,
      body: { ...s.messageJson(msg), ...(nonce === undefined ? {} : { nonce }) },
      headers: verdict.headers,
    };
  }
  if (rest === "/threads" && method === "POST")
    return startThread(ctx, channel.id, undefined, (await parsed()).json);
  const one = /^\/messages\/(\d+)(\/threads)?$/.exec(rest);
  if (one?.[1]) {
    // An ephemeral message exists for its one reader: only the interaction's webhook knows it.
    const msg = s.messages.get(channel.id)?.find((x) => x.id === one[1] && !x.deleted && !ephemeral(x));
    if (!msg) throw new HttpError(404, { message: "Unknown Message", code: 10008 });
    if (one[2] && method === "POST") return startThread(ctx, channel.id, msg, (await parsed()).json);
    if (method === "GET") return { status: 200, body: readable(ctx, s.messageJson(msg)) };
    if (method === "DELETE" || method === "PATCH") mayChange(channel);
    if (method === "DELETE") {
      msg.deleted = true;
      return { status: 204 };
    }
    if (method === "PATCH") {
      if (msg.author.id !== s.bot.id) {
        throw new HttpError(403, { message: "Cannot edit a message authored by another user", code: 50005 });
      }
      const verdict = ctx.limiter.take(`messages:${channel.id}`, "edit", p);
      if (!verdict.ok) return tooManyRequests(verdict.retryAfterMs, verdict.headers);
      const body = await parsed();
      mayAttach(s, channel, body);
      writeMessage(ctx, channel.id, body, msg);
      return { status: 200, body: s.messageJson(msg), headers: verdict.headers };
    }
  }
  throw new HttpError(404, { message: "404: Not Found", code: 0 });
}

const ephemeral = (m: StoredMessage) => (m.flags & 64) !== 0;

/** A message read over REST: without the Message Content intent approved, as `withoutContent`. */
function readable(ctx: RestContext, json: Record<string, unknown>): Record<string, unknown> {
  return ctx.messageContentApproved ? json : withoutContent(json, ctx.state.bot.id);
}

function history(s: DiscordState, channelId: string, url: URL): Record<string, unknown>[] {
  const limit = Math.min(100, Number(url.searchParams.get("limit") ?? 50));
  const before = url.searchParams.get("before");
  const after = url.searchParams.get("after");
  let list = (s.messages.get(channelId) ?? []).filter((x) => !x.deleted && !ephemeral(x));
  if (before) list = list.filter((x) => BigInt(x.id) < BigInt(before));
  if (after) list = list.filter((x) => BigInt(x.id) > BigInt(after));
  // Newest first, as Discord returns them.
  return list
    .slice(-limit)
    .reverse()
    .map((x) => s.messageJson(x));
}

function registerCommands(
  ctx: RestContext,
  method: string,
  guildId: string | undefined,
  body: ParsedBody,
): Reply {
  const s = ctx.state;
  if (method === "GET") {
    return { status: 200, body: guildId ? (s.commands.guild.get(guildId) ?? []) : s.commands.global };
  }
  if (method !== "PUT") throw new HttpError(405, { message: "405: Method Not Allowed", code: 0 });
  const list = (Array.isArray(body.json) ? body.json : Object.values(body.json)) as Record<string, unknown>[];
  const stored = list.map((c) => ({
    ...c,
    id: snowflake(),
    application_id: s.applicationId,
    version: snowflake(),
    type: c.type ?? 1,
    ...(guildId ? { guild_id: guildId } : {}),
  }));
  if (guildId) s.commands.guild.set(guildId, stored);
  else s.commands.global = stored;
  return { status: 200, body: stored };
}
