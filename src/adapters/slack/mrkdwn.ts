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

/** A line of classic mrkdwn, with its place in or around a code block (so a split can close and reopen it). */
export interface MrkdwnLine {
  kind: "text" | "code" | "open" | "close";
  text: string;
}

/**
 * Classic `mrkdwn` for places that take no `markdown_text` (ephemeral notices, fallback
 * text): `*bold*`, `_italic_`, `~strike~`, `<url|label>`, headings as bold lines, tables
 * as code blocks. Code spans and fenced blocks are only escaped.
 */
export function toMrkdwn(markdown: string): string {
  return mrkdwnLines(markdown)
    .map((l) => l.text)
    .join("\n");
}

export function mrkdwnLines(markdown: string): MrkdwnLine[] {
  const out: MrkdwnLine[] = [];
  let fence: Fence | null = null;
  for (const line of tablesToCodeBlocks(markdown).split("\n")) {
    if (fence) {
      if (closesFence(line, fence)) fence = null;
      out.push(fence ? { kind: "code", text: escapeMrkdwn(line) } : { kind: "close", text: "```" });
      continue;
    }
    const opener = parseOpener(line);
    if (opener) {
      fence = opener;
      // Slack shows the info string as code; drop it.
      out.push({ kind: "open", text: "```" });
      continue;
    }
    out.push({ kind: "text", text: inlineMrkdwn(line) });
  }
  return out;
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
 * mentions, channels, user groups, dates and links made readable, Slack's escapes undone.
 * The forms are those of Slack's "Formatting message text": `<@U…|name>`, `<#C…|name>`
 * (the name may be empty: then the id, since the bot has no scope to look channels up),
 * `<!subteam^S…|@handle>`, `<!date^ts^format^link|fallback>` (the fallback is what a
 * client without the user's time zone shows), `<!here>`, `<url|label>`.
 */
export function fromSlackText(
  text: string,
  botUserId: string,
  names: ReadonlyMap<string, string> = new Map(),
): string {
  return (
    text
      .replace(new RegExp(`<@${botUserId}(\\|[^>]*)?>`, "g"), "")
      .replace(
        /<@([UW][A-Z0-9_]+)(?:\|([^>]*))?>/g,
        (_m, id: string, label?: string) => `@${label || names.get(id) || id}`,
      )
      .replace(/<#([CG][A-Z0-9_]+)(?:\|([^>]*))?>/g, (_m, id: string, label?: string) => `#${label || id}`)
      .replace(/<!subteam\^([A-Z0-9_]+)(?:\|([^>]*))?>/g, (_m, id: string, label?: string) =>
        label ? (label.startsWith("@") ? label : `@${label}`) : `@${id}`,
      )
      .replace(
        /<!date\^(\d+)\^[^|>]*(?:\|([^>]*))?>/g,
        (_m, ts: string, fallback?: string) =>
          fallback || `${new Date(Number(ts) * 1000).toISOString().slice(0, 16).replace("T", " ")} UTC`,
      )
      .replace(/<!(here|channel|everyone)(?:\|[^>]*)?>/g, "@$1")
      // Any other special command (Slack may add some): its label, or its name.
      .replace(/<!([a-z_]+)[^|>]*(?:\|([^>]*))?>/g, (_m, name: string, label?: string) => label || `@${name}`)
      .replace(/<([a-z][a-z0-9+.-]*:[^|>]+)\|([^>]+)>/gi, (_m, url: string, label: string) =>
        sameAddress(url, label) ? label : `${label} (${url})`,
      )
      .replace(/<([a-z][a-z0-9+.-]*:[^>]+)>/gi, "$1")
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&amp;/g, "&")
      .replace(/[ \t]{2,}/g, " ")
      .trim()
  );
}

/** A link whose label is its own address (Slack writes pasted addresses and emails so): said once. */
function sameAddress(url: string, label: string): boolean {
  return url === label || url.replace(/^(?:mailto:|tel:|https?:\/\/)/i, "") === label;
}
