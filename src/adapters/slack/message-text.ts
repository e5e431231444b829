import { blocksMarkup, isJson, type Json, list } from "./block-text.js";
import type { SlackFile } from "./files.js";
import { fromSlackText } from "./mrkdwn.js";
import type { UserNames } from "./names.js";

/** What a message carries besides its author: the fields its words and files can be in. */
export interface SlackMessageParts {
  text?: string;
  blocks?: unknown[];
  /** Legacy attachments: alert and CI bots' whole content, a forwarded message's text and files. */
  attachments?: unknown[];
  files?: SlackFile[];
}

/**
 * What of a message's blocks and attachments the model reads, at most (a few thousand
 * tokens): an alert can hold dozens of alerts' labels, and a thread of them would crowd
 * out the conversation. Slack refuses more than 100 attachments and asks for at most 20.
 */
export const ATTACHED_TEXT_MAX = 4_000;
const ATTACHMENTS_READ = 20;
/** Users mentioned by id alone looked up per message (users.info is Tier 4, shared by the workspace). */
const MENTION_LOOKUPS = 5;

const str = (v: unknown): string => (typeof v === "string" ? v.trim() : "");

/**
 * The message's words in Slack's markup: its text, the text of its layout blocks when the
 * text does not already say it (bots put a summary in `text` and the rest in blocks; a
 * person's rich_text block repeats the text, so it counts only when the text is empty),
 * and its attachments (see attachmentMarkup). What blocks and attachments add to the text
 * is bounded by ATTACHED_TEXT_MAX; the text itself is never cut.
 */
export function slackMarkup(m: SlackMessageParts): string {
  const text = (m.text ?? "").trim();
  const layout = blocksMarkup(m.blocks, text === "");
  const attached = (m.attachments ?? []).slice(0, ATTACHMENTS_READ).filter(isJson).map(attachmentMarkup);
  const all = [layout ? merged(text, layout) : text, ...attached].filter(Boolean).join("\n\n");
  return bounded(all, text.length + ATTACHED_TEXT_MAX);
}

/** The message's files and those of what it forwards, once each. */
export function messageFileList(m: SlackMessageParts): SlackFile[] {
  const forwarded = (m.attachments ?? [])
    .filter(isJson)
    .flatMap((a) => (Array.isArray(a.files) ? (a.files as SlackFile[]) : []));
  const seen = new Set<string>();
  return [...(m.files ?? []), ...forwarded].filter((f) => !f.id || (!seen.has(f.id) && !!seen.add(f.id)));
}

/** The message as the model reads it, mentions of people by id alone named when Slack says soon (see UserNames.of). */
export async function readableText(
  m: SlackMessageParts,
  botUserId: string,
  people: UserNames,
): Promise<string> {
  const markup = slackMarkup(m);
  await lookUpMentions(people, [markup], botUserId, MENTION_LOOKUPS);
  return fromSlackText(markup, botUserId, people.known);
}

/** Looks up the people `markups` mention by id alone whose names are not known yet, `max` of them at most. */
export async function lookUpMentions(
  people: UserNames,
  markups: string[],
  botUserId: string,
  max: number,
): Promise<void> {
  const ids = new Set<string>();
  for (const markup of markups)
    for (const [, id] of markup.matchAll(/<@([UW][A-Z0-9_]+)>/g))
      if (id && id !== botUserId && !people.known.has(id)) ids.add(id);
  await Promise.all([...ids].slice(0, max).map((id) => people.of(id)));
}

/** Text and layout blocks, each said once: one that holds the other's words stands for both. */
function merged(text: string, layout: string): string {
  const words = (s: string) => s.replace(/[^\p{L}\p{N}]+/gu, "").toLowerCase();
  if (words(layout).includes(words(text))) return layout;
  if (words(text).includes(words(layout))) return text;
  return `${text}\n${layout}`;
}

/**
 * An attachment's words: a shared or forwarded message as who said it and what (its text,
 * or its blocks in `message_blocks`), a link preview as its page, anything else (an
 * alert, a CI result) as its pretext, author, title, text and fields, or its fallback when
 * it has none of those.
 */
function attachmentMarkup(a: Json): string {
  const blocks = list(a.message_blocks).flatMap((b) => (isJson(b.message) ? [b.message.blocks] : []));
  if (a.is_share || a.is_msg_unfurl) {
    const who = str(a.author_name) || str(a.author_subname) || "someone";
    const where = str(a.channel_name) ? ` in #${str(a.channel_name)}` : "";
    const said = str(a.text) || blocks.map((b) => blocksMarkup(b, true)).join("\n") || str(a.fallback);
    return `[shared message from ${who}${where}]\n${said}`;
  }
  const url = str(a.from_url) || str(a.original_url);
  const title = str(a.title) && str(a.title_link) ? `<${str(a.title_link)}|${str(a.title)}>` : str(a.title);
  const fields = list(a.fields).map((f) => [str(f.title), str(f.value)].filter(Boolean).join(": "));
  const parts = [
    str(a.pretext),
    str(a.author_name),
    title,
    str(a.text),
    ...fields,
    blocksMarkup(a.blocks, true),
  ];
  const said = parts.filter(Boolean).join("\n") || str(a.fallback);
  return said ? `[${url ? `link preview of <${url}>` : "attachment"}]\n${said}` : "";
}

/** `text` cut to `max` characters at a line or a space, never inside a `<…>`, saying so. */
function bounded(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = text.lastIndexOf("\n", max);
  if (cut < max / 2) cut = text.lastIndexOf(" ", max);
  if (cut < max / 2) cut = max;
  const open = text.lastIndexOf("<", cut);
  if (open > max / 2 && open > text.lastIndexOf(">", cut)) cut = open;
  return `${text.slice(0, cut).trimEnd()}\n… (${(text.length - cut).toLocaleString("en")} more characters not shown)`;
}
