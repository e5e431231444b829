import { closesFence, type Fence, parseOpener } from "../../runtime/split.js";
import { tablesToCodeBlocks } from "../../runtime/tables.js";

/**
 * Answers go to Slack as `markdown_text` (standard Markdown, rendered by Slack), which has
 * everything the model writes except tables: those become aligned code blocks.
 */
export function toSlackMarkdown(markdown: string): string {
  return tablesToCodeBlocks(markdown);
}

/** Slack requires these three escaped in every `text` it parses (code included). */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/**
 * Classic `mrkdwn` for places that take no `markdown_text` (ephemeral notices, fallback
 * text): `*bold*`, `_italic_`, `~strike~`, `<url|label>`, headings as bold lines, tables
 * as code blocks. Code spans and fenced blocks are only escaped.
 */
export function toMrkdwn(markdown: string): string {
  const out: string[] = [];
  let fence: Fence | null = null;
  for (const line of tablesToCodeBlocks(markdown).split("\n")) {
    if (fence) {
      if (closesFence(line, fence)) fence = null;
      out.push(fence ? escapeMrkdwn(line) : "```");
      continue;
    }
    const opener = parseOpener(line);
    if (opener) {
      fence = opener;
      // Slack shows the info string as code; drop it.
      out.push("```");
      continue;
    }
    out.push(inlineMrkdwn(line));
  }
  return out.join("\n");
}

function inlineMrkdwn(line: string): string {
  const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
  if (heading) return `*${inlineMrkdwn(heading[1] ?? "").replace(/^\*(.*)\*$/, "$1")}*`;
  const bullet = /^(\s*)[-*+]\s+(.*)$/.exec(line);
  if (bullet) return `${bullet[1]}• ${inlineMrkdwn(bullet[2] ?? "")}`;
  // A quote's `>` stays as it is (Slack's quote bar); escaped, it showed as a literal ">".
  const quote = /^ {0,3}>\s?(.*)$/.exec(line);
  if (quote) return `>${inlineMrkdwn(quote[1] ?? "")}`;
  // Code spans are kept apart so that nothing inside them is converted.
  return line
    .split(/(`[^`]*`)/)
    .map((piece, i) => (i % 2 === 1 ? escapeMrkdwn(piece) : convertSpans(piece)))
    .join("");
}

function convertSpans(text: string): string {
  const links: string[] = [];
  // A URL may hold balanced parentheses (Wikipedia's "Foo_(bar)"): the link ends at the unbalanced one.
  let s = text.replace(
    /\[([^\]]+)\]\((https?:\/\/(?:[^\s()]|\([^\s()]*\))+)\)/g,
    (_m, label: string, url: string) => {
      links.push(`<${url}|${escapeMrkdwn(label)}>`);
      return `\uE000${links.length - 1}\uE000`;
    },
  );
  s = escapeMrkdwn(s)
    .replace(/\*\*(.+?)\*\*/g, "\uE001$1\uE001")
    .replace(/__(.+?)__/g, "\uE001$1\uE001")
    .replace(/(^|[^*\w])\*(?!\s)([^*]+?)\*(?!\w)/g, "$1_$2_")
    .replace(/~~(.+?)~~/g, "~$1~")
    .replace(/\uE001/g, "*");
  return s.replace(/\uE000(\d+)\uE000/g, (_m, i: string) => links[Number(i)] ?? "");
}

/**
 * A user's message as the model should read it: the bot's own mention removed, other
 * mentions, channels and links made readable, Slack's escapes undone.
 */
export function fromSlackText(
  text: string,
  botUserId: string,
  names: ReadonlyMap<string, string> = new Map(),
): string {
  return text
    .replace(new RegExp(`<@${botUserId}(\\|[^>]*)?>`, "g"), "")
    .replace(
      /<@([UW][A-Z0-9_]+)(?:\|([^>]*))?>/g,
      (_m, id: string, label?: string) => `@${label || names.get(id) || id}`,
    )
    .replace(/<#([CG][A-Z0-9_]+)(?:\|([^>]*))?>/g, (_m, id: string, label?: string) => `#${label || id}`)
    .replace(/<!(here|channel|everyone)(?:\|[^>]*)?>/g, "@$1")
    .replace(/<((?:https?|mailto):[^|>]+)\|([^>]+)>/g, "$2 ($1)")
    .replace(/<((?:https?|mailto):[^>]+)>/g, "$1")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&")
    .replace(/[ \t]{2,}/g, " ")
    .trim();
}
