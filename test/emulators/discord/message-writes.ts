import type { ParsedBody } from "./body.js";
import { uploadLimit } from "./guild.js";
import { HttpError, Intent, invalidForm, type RestContext } from "./rest.js";
import type { StoredAttachment, StoredMessage } from "./types.js";

export const CONTENT_LIMIT = 2_000;
export const ATTACHMENT_LIMIT = 10;

/** Discord's limit on a nonce: an integer, or a string of at most 25 characters. */
const NONCE_CHARS = 25;

export function nonceOf(json: Record<string, unknown>): string | undefined {
  const nonce = json.nonce;
  if (nonce === undefined || nonce === null) return undefined;
  if (typeof nonce === "number" && Number.isInteger(nonce)) return String(nonce);
  if (typeof nonce !== "string")
    throw invalidForm("nonce", "MODEL_TYPE_CONVERT", "Nonce must be a string or an integer.");
  if (nonce.length > NONCE_CHARS)
    throw invalidForm("nonce", "BASE_TYPE_BAD_LENGTH", `Must be between 1 and ${NONCE_CHARS} in length.`);
  return nonce;
}

/** Creates or edits a message, enforcing Discord's content, attachment and file-size rules. */
export function writeMessage(
  ctx: RestContext,
  channelId: string,
  body: ParsedBody,
  existing: StoredMessage | undefined,
  extra: { interactionId?: string; flags?: number; nonce?: string } = {},
): StoredMessage {
  const s = ctx.state;
  const content = typeof body.json.content === "string" ? body.json.content : undefined;
  if (content !== undefined && content.length > CONTENT_LIMIT) {
    throw invalidForm("content", "BASE_TYPE_MAX_LENGTH", `Must be ${CONTENT_LIMIT} or fewer in length.`);
  }
  const components = body.json.components === undefined ? undefined : checkComponents(body.json.components);
  const listed = Array.isArray(body.json.attachments)
    ? (body.json.attachments as { id: string | number }[])
    : undefined;
  const kept = existing
    ? listed
      ? existing.attachments.filter((a) => listed.some((l) => String(l.id) === a.id))
      : existing.attachments
    : [];
  if (kept.length + body.files.length > ATTACHMENT_LIMIT) {
    throw invalidForm(
      "attachments",
      "BASE_TYPE_MAX_LENGTH",
      `Must be ${ATTACHMENT_LIMIT} or fewer in length.`,
    );
  }
  for (const f of body.files) {
    if (f.data.length > uploadLimit(s, channelId)) {
      throw new HttpError(413, { message: "Request entity too large", code: 40005 });
    }
  }
  const embeds = Array.isArray(body.json.embeds) ? (body.json.embeds as unknown[]) : undefined;
  // Discord checks the message as it would be after the write, so an edit may not empty it either.
  const shown = {
    content: content ?? existing?.content ?? "",
    files: kept.length + body.files.length,
    embeds: embeds ?? existing?.embeds ?? [],
    components: components ?? existing?.components ?? [],
  };
  if (isEmpty(shown)) throw new HttpError(400, { message: "Cannot send an empty message", code: 50006 });
  const added: StoredAttachment[] = body.files.map((f) => s.storeFile(channelId, f));
  const channel = s.channels.get(channelId);
  const guildId = channel?.guild_id;
  const intent = guildId ? Intent.GuildMessages : Intent.DirectMessages;
  if (existing) {
    if (content !== undefined && content !== existing.content) {
      existing.edits.push(existing.content);
      existing.content = content;
    }
    existing.attachments = [...kept, ...added];
    if (components !== undefined) existing.components = components;
    if (embeds !== undefined) existing.embeds = embeds;
    existing.editedAt = Date.now();
    if (body.json.allowed_mentions !== undefined) existing.allowedMentions = body.json.allowed_mentions;
    if (typeof extra.flags === "number") existing.flags = extra.flags;
    // A channel the bot is no member of sends it nothing, its own webhook's messages included.
    if (!s.withoutBot.has(channelId)) ctx.dispatch("MESSAGE_UPDATE", s.messageJson(existing), intent);
    return existing;
  }
  const flags = extra.flags ?? (typeof body.json.flags === "number" ? body.json.flags : 0);
  const replyTo = replyTarget(s, channelId, body.json.message_reference);
  const msg = s.addMessage({
    channelId,
    guildId,
    author: s.bot,
    content: content ?? "",
    attachments: added,
    mentions: [],
    flags,
    interactionId: extra.interactionId,
    ...(extra.nonce ? { nonce: extra.nonce } : {}),
    allowedMentions: body.json.allowed_mentions,
    ...(components?.length ? { components } : {}),
    ...(embeds?.length ? { embeds } : {}),
    ...(replyTo ? { replyTo } : {}),
  });
  // The bot receives its own messages on the gateway, as on Discord; ephemeral ones stay private.
  if ((flags & 64) === 0 && !s.withoutBot.has(channelId))
    ctx.dispatch("MESSAGE_CREATE", s.messageJson(msg), intent);
  return msg;
}

/** Whitespace alone is no content to Discord (it trims it); files, embeds or components are. */
function isEmpty(m: { content: string; files: number; embeds: unknown[]; components: unknown[] }): boolean {
  return m.content.trim() === "" && m.files === 0 && m.embeds.length === 0 && m.components.length === 0;
}

/**
 * The message a new one replies to, as Discord checks a `message_reference`: a message of
 * the same channel. One that is not there (deleted, another channel's) fails the send,
 * unless `fail_if_not_exists` is false, which sends it as a plain message.
 */
function replyTarget(s: RestContext["state"], channelId: string, value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  const ref = value as { message_id?: unknown; channel_id?: unknown; fail_if_not_exists?: unknown };
  if (typeof ref.message_id !== "string" && typeof ref.message_id !== "number")
    throw invalidForm("message_reference", "MODEL_TYPE_CONVERT", "Must be a reply's message_id.");
  const id = String(ref.message_id);
  const sameChannel = ref.channel_id === undefined || String(ref.channel_id) === channelId;
  const there = sameChannel && s.messages.get(channelId)?.some((m) => m.id === id && !m.deleted);
  if (there) return id;
  if (ref.fail_if_not_exists === false) return undefined;
  throw invalidForm("message_reference", "REPLIES_UNKNOWN_MESSAGE", "Unknown message");
}

type ButtonLike = { type?: unknown; custom_id?: unknown; label?: unknown; style?: unknown; url?: unknown };

/** Discord's limit on a link button's URL. */
const LINK_URL_CHARS = 512;

/**
 * A link button (style 5) as Discord checks it: a url of at most 512 characters with an
 * http, https or discord scheme, and no custom id (Discord tells the app nothing of a
 * press, so there is nothing to name).
 */
function checkLinkButton(c: ButtonLike, at: string): void {
  if (typeof c.url !== "string" || c.url === "")
    throw invalidForm(`${at}.url`, "BUTTON_COMPONENT_URL_REQUIRED", "A url is required");
  if (c.url.length > LINK_URL_CHARS)
    throw invalidForm(`${at}.url`, "BASE_TYPE_MAX_LENGTH", `Must be ${LINK_URL_CHARS} or fewer in length.`);
  if (!/^(https?|discord):\/\//i.test(c.url))
    throw invalidForm(
      `${at}.url`,
      "URL_TYPE_INVALID_SCHEME",
      "Scheme must be one of ('http', 'https', 'discord').",
    );
  if (c.custom_id !== undefined)
    throw invalidForm(
      `${at}.custom_id`,
      "BUTTON_COMPONENT_LINK_HAS_CUSTOM_ID",
      "A custom id cannot be used with a link button",
    );
}

/**
 * A message's components as Discord checks them: at most 5 action rows of at most 5
 * buttons (or one select), each interactive one with a custom id of 1-100 characters that
 * is unique in the message, button labels of at most 80 characters; link buttons as
 * `checkLinkButton` says.
 */
function checkComponents(value: unknown): unknown[] {
  if (!Array.isArray(value)) throw invalidForm("components", "MODEL_TYPE_CONVERT", "Not a list.");
  if (value.length > 5)
    throw invalidForm("components", "BASE_TYPE_MAX_LENGTH", "Must be 5 or fewer in length.");
  const ids = new Set<string>();
  value.forEach((row: { type?: unknown; components?: unknown }, r) => {
    if (row?.type !== 1 || !Array.isArray(row.components) || row.components.length === 0) {
      throw invalidForm(
        `components.${r}`,
        "COMPONENT_LAYOUT_WIDTH_EXCEEDED",
        "Must be an action row of 1 to 5 components.",
      );
    }
    if (row.components.length > 5) {
      throw invalidForm(
        `components.${r}.components`,
        "BASE_TYPE_MAX_LENGTH",
        "Must be 5 or fewer in length.",
      );
    }
    row.components.forEach((c: ButtonLike, i) => {
      const at = `components.${r}.components.${i}`;
      if (c?.type === 2 && typeof c.label === "string" && c.label.length > 80) {
        throw invalidForm(`${at}.label`, "BASE_TYPE_MAX_LENGTH", "Must be 80 or fewer in length.");
      }
      if (c?.type === 2 && c.style === 5) {
        checkLinkButton(c, at);
        return;
      }
      if (c?.type === 2 && c.url !== undefined)
        throw invalidForm(`${at}.url`, "BUTTON_COMPONENT_INVALID_URL", "Only link buttons can have a url");
      const id = c?.custom_id;
      if (typeof id !== "string" || id.length < 1 || id.length > 100) {
        throw invalidForm(`${at}.custom_id`, "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.");
      }
      if (ids.has(id)) {
        throw invalidForm(
          `${at}.custom_id`,
          "COMPONENT_CUSTOM_ID_DUPLICATED",
          "Component custom id cannot be duplicated",
        );
      }
      ids.add(id);
    });
  });
  return value;
}
