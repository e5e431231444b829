import { escapeMrkdwn } from "./mrkdwn.js";

/*
 * The words of Block Kit blocks, in Slack's own markup (what a message's `text` holds), so
 * that one pass of fromSlackText makes them readable: bots that post blocks only (an alert,
 * a CI result) and messages forwarded with them leave `text` empty or a one-line summary.
 */

export type Json = Record<string, unknown>;

export const isJson = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
/** The objects of an array, or none when `v` is no array. */
export const list = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isJson) : []);
const str = (v: unknown): string => (typeof v === "string" ? v : "");

/** A text object's text: mrkdwn and plain_text both come as Slack stores them. */
const textOf = (t: unknown): string => (isJson(t) ? str(t.text) : "");

/** The text of the blocks, one block a paragraph; `rich` says whether rich_text blocks count. */
export function blocksMarkup(blocks: unknown, rich: boolean): string {
  return list(blocks)
    .map((b) => blockMarkup(b, rich))
    .filter(Boolean)
    .join("\n");
}

function blockMarkup(b: Json, rich: boolean): string {
  switch (b.type) {
    case "section":
      return [textOf(b.text), ...list(b.fields).map(textOf)].filter(Boolean).join("\n");
    case "header":
      return textOf(b.text) ? `*${textOf(b.text)}*` : "";
    case "context":
      return list(b.elements).map(textOf).filter(Boolean).join(" ");
    case "markdown":
      return str(b.text);
    case "rich_text":
      return rich ? richText(b.elements) : "";
    default:
      return "";
  }
}

/** A rich_text block's elements: its leaves hold text as typed, so they are escaped as Slack's text is. */
function richText(elements: unknown): string {
  return list(elements)
    .map((e) => {
      switch (e.type) {
        case "rich_text_section":
          return inline(e.elements);
        case "rich_text_preformatted":
          return `\`\`\`\n${inline(e.elements)}\n\`\`\``;
        case "rich_text_quote":
          return inline(e.elements)
            .split("\n")
            .map((l) => `> ${l}`)
            .join("\n");
        case "rich_text_list":
          return list(e.elements)
            .map((item, i) => `${e.style === "ordered" ? `${i + 1}.` : "•"} ${inline(item.elements)}`)
            .join("\n");
        default:
          return "";
      }
    })
    .map((s) => s.replace(/\n+$/, ""))
    .join("\n");
}

function inline(elements: unknown): string {
  return list(elements)
    .map((e) => {
      switch (e.type) {
        case "text":
          return escapeMrkdwn(str(e.text));
        case "link":
          return e.text ? `<${str(e.url)}|${escapeMrkdwn(str(e.text))}>` : `<${str(e.url)}>`;
        case "user":
          return `<@${str(e.user_id)}>`;
        case "usergroup":
          return `<!subteam^${str(e.usergroup_id)}>`;
        case "channel":
          return `<#${str(e.channel_id)}>`;
        case "broadcast":
          return `<!${str(e.range)}>`;
        case "emoji":
          return `:${str(e.name)}:`;
        case "date":
          return `<!date^${Number(e.timestamp) || 0}^{date_short}|${escapeMrkdwn(str(e.fallback))}>`;
        default:
          return escapeMrkdwn(str(e.text));
      }
    })
    .join("");
}
