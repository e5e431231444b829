import type { ParsedBody } from "./body.js";
import { followupsCapped, USER_INSTALL_FOLLOWUPS } from "./installs.js";
import { writeMessage } from "./message-writes.js";
import { CALLBACK_MODAL, openModal } from "./modals.js";
import { HttpError, invalidForm, type Reply, type RestContext, tooManyRequests } from "./rest.js";
import type { StoredInteraction, StoredMessage } from "./types.js";

/** Discord's deadline for the first interaction callback: later ones get 404 Unknown interaction (10062). */
export const INTERACTION_ACK_MS = 3_000;
/** How long the interaction token works for follow-ups and `@original` edits: then 401 Invalid Webhook Token (50027). */
export const INTERACTION_TOKEN_TTL_MS = 15 * 60_000;
const EPHEMERAL = 64;
const LOADING = 128;

/**
 * Interaction callbacks and the interaction webhook (`@original` edits, follow-ups).
 * These routes take no bot token (the interaction token is the credential), as on Discord.
 */
export async function handleInteractionRoute(
  ctx: RestContext,
  method: string,
  p: string,
  parsed: () => Promise<ParsedBody>,
  url: URL,
): Promise<Reply | undefined> {
  const cb = /^\/interactions\/(\d+)\/([^/]+)\/callback$/.exec(p);
  if (cb && method === "POST") return callback(ctx, cb[1] ?? "", cb[2] ?? "", await parsed(), url);
  const hook = /^\/webhooks\/(\d+)\/([^/]+)(?:\/messages\/(@original|%40original|\d+))?$/.exec(p);
  if (!hook) return undefined;
  const interaction = byToken(ctx, hook[2] ?? "");
  if (Date.now() - interaction.sentAt > ctx.interactionTokenTtlMs) {
    throw new HttpError(401, { message: "Invalid Webhook Token", code: 50027 });
  }
  const which = hook[3];
  if (!which && method === "POST") {
    if (followupsCapped(interaction) && interaction.followupIds.length >= USER_INSTALL_FOLLOWUPS) {
      throw new HttpError(400, {
        message: "This interaction has hit the maximum number of follow up messages",
        code: 40094,
      });
    }
    const body = await parsed();
    const flags = typeof body.json.flags === "number" ? body.json.flags : 0;
    const msg = writeMessage(ctx, interaction.channelId, body, undefined, {
      interactionId: interaction.id,
      flags,
    });
    interaction.followupIds.push(msg.id);
    return { status: 200, body: ctx.state.messageJson(msg) };
  }
  const msg =
    which === "@original" || which === "%40original"
      ? original(ctx, interaction)
      : sentWith(ctx, interaction, which ?? "");
  // A deleted message is unknown to every method, as on a channel's own routes.
  if (!msg || msg.deleted) throw new HttpError(404, { message: "Unknown Message", code: 10008 });
  if (method === "GET") return { status: 200, body: ctx.state.messageJson(msg) };
  if (method === "DELETE") {
    msg.deleted = true;
    return { status: 204 };
  }
  if (method === "PATCH") {
    const verdict = ctx.limiter.take(`webhook:${interaction.token}`, "edit", p);
    if (!verdict.ok) return tooManyRequests(verdict.retryAfterMs, verdict.headers);
    writeMessage(ctx, interaction.channelId, await parsed(), msg, { flags: msg.flags & ~LOADING });
    return { status: 200, body: ctx.state.messageJson(msg), headers: verdict.headers };
  }
  return undefined;
}

function byToken(ctx: RestContext, token: string): StoredInteraction {
  for (const i of ctx.state.interactions.values()) if (i.token === token) return i;
  throw new HttpError(404, { message: "Unknown Webhook", code: 10015 });
}

function original(ctx: RestContext, i: StoredInteraction): StoredMessage | undefined {
  return i.originalId ? ctx.state.findMessage(i.originalId) : undefined;
}

/**
 * A message by id, if this token sent it (the original response or a follow-up): a webhook
 * reads and writes only its own messages, so even the bot's other messages in the same
 * channel, posted there or through another interaction, are unknown to it.
 */
function sentWith(ctx: RestContext, i: StoredInteraction, id: string): StoredMessage | undefined {
  return id === i.originalId || i.followupIds.includes(id) ? ctx.state.findMessage(id) : undefined;
}

async function callback(
  ctx: RestContext,
  id: string,
  token: string,
  body: ParsedBody,
  url: URL,
): Promise<Reply> {
  const i = ctx.state.interactions.get(id);
  if (!i || i.token !== token) throw new HttpError(404, { message: "Unknown interaction", code: 10062 });
  if (Date.now() - i.sentAt > ctx.interactionAckMs) {
    throw new HttpError(404, { message: "Unknown interaction", code: 10062 });
  }
  if (i.callbacks.length > 0) {
    throw new HttpError(400, { message: "Interaction has already been acknowledged.", code: 40060 });
  }
  const type = Number(body.json.type);
  const data = (body.json.data ?? {}) as Record<string, unknown>;
  const flags = typeof data.flags === "number" ? data.flags : 0;
  if (![4, 5, 6, 7, 8, CALLBACK_MODAL].includes(type)) {
    throw new HttpError(400, { message: `Unsupported callback type ${type}`, code: 50035 });
  }
  // Checked before anything is recorded: a refused callback does not acknowledge the interaction.
  const modal = type === CALLBACK_MODAL ? openModal(i, body.json.data) : undefined;
  let msg: StoredMessage | undefined;
  if (type === 4) {
    msg = writeMessage(ctx, i.channelId, { ...body, json: data }, undefined, { interactionId: i.id, flags });
    i.originalId = msg.id;
  } else if (type === 5) {
    msg = ctx.state.addMessage({
      channelId: i.channelId,
      guildId: ctx.state.channels.get(i.channelId)?.guild_id,
      author: ctx.state.bot,
      content: "",
      attachments: [],
      mentions: [],
      flags: (flags & EPHEMERAL) | LOADING,
      interactionId: i.id,
    });
    i.originalId = msg.id;
  } else if (type === 8) {
    i.choices = choicesOf(data.choices);
  } else if (modal) {
    i.modal = modal;
  }
  i.callbacks.push(type);
  i.ackMs = Date.now() - i.sentAt;
  if (url.searchParams.get("with_response") !== "true") return { status: 204 };
  // The response names the message it created; only a reply carries that message itself (a
  // deferral's "thinking…" is named, not sent), as Discord's callback resource documents.
  return {
    status: 200,
    body: {
      interaction: {
        id: i.id,
        type: i.type,
        ...(msg ? { response_message_id: msg.id } : {}),
        response_message_loading: type === 5,
        response_message_ephemeral: (flags & EPHEMERAL) !== 0,
      },
      resource: { type, ...(msg && type === 4 ? { message: ctx.state.messageJson(msg) } : {}) },
    },
  };
}

/** Discord shows at most 25 autocomplete choices; the whole callback is refused past that. */
const CHOICES_MAX = 25;
/** A choice's name, and a string value, are 1 to 100 characters (the option choice structure). */
const CHOICE_CHARS = 100;

type Choice = { name: string; value: string | number };

/**
 * An autocomplete callback's choices, checked as Discord checks them before anything is
 * recorded: one bad choice refuses them all, and the person sees no suggestion.
 */
function choicesOf(value: unknown): Choice[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw invalidForm("data.choices", "BASE_TYPE_ARRAY", "Must be an array.");
  if (value.length > CHOICES_MAX) {
    throw invalidForm("data.choices", "BASE_TYPE_MAX_LENGTH", `Must be ${CHOICES_MAX} or fewer in length.`);
  }
  const bad = `Must be between 1 and ${CHOICE_CHARS} in length.`;
  const fits = (s: unknown) => typeof s === "string" && s.length >= 1 && s.length <= CHOICE_CHARS;
  return value.map((c: unknown, n) => {
    const choice = (c ?? {}) as Record<string, unknown>;
    if (!fits(choice.name)) throw invalidForm(`data.choices.${n}.name`, "BASE_TYPE_BAD_LENGTH", bad);
    const v = choice.value;
    if (typeof v === "number" ? !Number.isFinite(v) : !fits(v)) {
      throw invalidForm(`data.choices.${n}.value`, "BASE_TYPE_BAD_LENGTH", bad);
    }
    return { name: choice.name as string, value: v as string | number };
  });
}
