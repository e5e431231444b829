import type { SectionBlock } from "@slack/web-api";
import { type MrkdwnLine, mrkdwnLines } from "./mrkdwn.js";

/** Slack's limit on a section block's text, counted after escaping (Block Kit reference). */
export const SECTION_TEXT_MAX = 3_000;
/** Slack's limit on the blocks of one message. */
export const MESSAGE_BLOCKS_MAX = 50;

const FENCE = "```";
/** Where text was left out between what is kept of the start and of the end. */
const GAP = "…";
/** Room in a section beside a piece: a fence reopened before it, one closed after it, the gap line. */
const PIECE_MAX = SECTION_TEXT_MAX - 2 * (FENCE.length + 1) - (GAP.length + 1);
/** How far back a cut in prose looks for a space. */
const SPACE_LOOKBACK = 100;

/**
 * `markdown` as classic mrkdwn in at most `maxBlocks` section blocks. Measured after
 * escaping: a question's arguments full of `<` grow fourfold as `&lt;`, and a cut of the
 * escaped text at 3,000 lost its closing fence (the rest of the message showed as code)
 * and its last lines (an approval's deadline). Each section closes the code block it
 * ends in and the next one reopens it; a cut never halves an entity or a `<link|label>`.
 * Text too long for `maxBlocks` keeps its start and its end, with "…" for the middle.
 */
export function sectionBlocks(markdown: string, maxBlocks: number): SectionBlock[] {
  return sectionTexts(markdown, Math.max(1, maxBlocks)).map((text) => ({
    type: "section",
    text: { type: "mrkdwn", text },
  }));
}

/** `markdown` in one section block (see sectionBlocks). */
export function sectionBlock(markdown: string): SectionBlock {
  const [block] = sectionBlocks(markdown, 1);
  return block ?? { type: "section", text: { type: "mrkdwn", text: "" } };
}

function sectionTexts(markdown: string, maxBlocks: number): string[] {
  const lines = mrkdwnLines(markdown);
  const whole = pack(pieces(lines, PIECE_MAX), SECTION_TEXT_MAX).map(render);
  if (whole.length <= maxBlocks) return whole.length > 0 ? whole : [""];
  if (maxBlocks === 1) {
    // Half for each end, with pieces small enough that the start's first always fits beside the end.
    const half = Math.floor(SECTION_TEXT_MAX / 2);
    const small = pieces(lines, half - 2 * (FENCE.length + 1) - (GAP.length + 2));
    const tail = packFromEnd(small, half);
    const headRoom = SECTION_TEXT_MAX - render(tail.chunk).length - (GAP.length + 2);
    const [head = []] = pack(small.slice(0, tail.start), headRoom);
    return [[render(head), GAP, render(tail.chunk)].filter(Boolean).join("\n")];
  }
  const all = pieces(lines, PIECE_MAX);
  const tail = packFromEnd(all, SECTION_TEXT_MAX);
  const head = pack(all.slice(0, tail.start), SECTION_TEXT_MAX - (GAP.length + 1)).map(render);
  if (head.length < maxBlocks) return [...head, render(tail.chunk)];
  const kept = head.slice(0, maxBlocks - 1);
  kept[kept.length - 1] = `${kept.at(-1)}\n${GAP}`;
  return [...kept, render(tail.chunk)];
}

/** The lines, those longer than `max` cut into pieces of their kind. */
function pieces(lines: MrkdwnLine[], max: number): MrkdwnLine[] {
  return lines.flatMap((line) => {
    const out: MrkdwnLine[] = [];
    let rest = line.text;
    while (rest.length > max) {
      const at = cutAt(rest, max, line.kind === "text");
      out.push({ kind: line.kind, text: rest.slice(0, at) });
      rest = rest.slice(at);
    }
    out.push({ kind: line.kind, text: rest });
    return out;
  });
}

/** Where to cut `text` at or before `max`: not inside `&lt;` or `<url|label>`, nor a surrogate pair. */
function cutAt(text: string, max: number, prose: boolean): number {
  let cut = max;
  if (prose) {
    const space = text.lastIndexOf(" ", cut - 1);
    if (space > 0 && space >= cut - SPACE_LOOKBACK) cut = space + 1;
  }
  const open = text.lastIndexOf("<", cut - 1);
  // A token that is most of the piece is cut anyway: nothing shorter holds it.
  if (open > max / 2 && text.indexOf(">", open) >= cut) cut = open;
  const amp = text.lastIndexOf("&", cut - 1);
  const semi = amp >= 0 ? text.indexOf(";", amp) : -1;
  // Slack's three entities are at most five characters (`&amp;`).
  if (amp >= 0 && semi >= cut && semi - amp < 5) cut = amp;
  const before = text.charCodeAt(cut - 1);
  if (before >= 0xd800 && before <= 0xdbff) cut -= 1;
  return Math.max(1, cut);
}

/** What a section shows of its lines: a fence it ends inside closed, one it starts inside reopened. */
function render(chunk: MrkdwnLine[]): string {
  let lines = chunk;
  // A close at the start was done by the section before; an open at the end, by the next.
  if (lines[0]?.kind === "close") lines = lines.slice(1);
  if (lines.at(-1)?.kind === "open") lines = lines.slice(0, -1);
  const text = lines.map((l) => l.text);
  if (lines[0]?.kind === "code") text.unshift(FENCE);
  if (lines.at(-1)?.kind === "code") text.push(FENCE);
  return text.join("\n");
}

/** The length `render` gives at most for lines of `chars` characters joined, from `first` to `last`. */
function rendered(chars: number, first: MrkdwnLine, last: MrkdwnLine): number {
  const fence = FENCE.length + 1;
  return chars + (first.kind === "code" ? fence : 0) + (last.kind === "code" ? fence : 0);
}

/** Pieces in order, as many to a section as fit within `limit`. */
function pack(all: MrkdwnLine[], limit: number): MrkdwnLine[][] {
  const chunks: MrkdwnLine[][] = [];
  let chunk: MrkdwnLine[] = [];
  let chars = 0;
  for (const p of all) {
    const first = chunk[0];
    if (first && rendered(chars + 1 + p.text.length, first, p) > limit) {
      chunks.push(chunk);
      chunk = [];
      chars = 0;
    }
    chars += (chunk.length > 0 ? 1 : 0) + p.text.length;
    chunk.push(p);
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks.filter((c) => render(c) !== "");
}

/** The last pieces that fit in one section within `limit`, and the index of the first of them. */
function packFromEnd(all: MrkdwnLine[], limit: number): { chunk: MrkdwnLine[]; start: number } {
  let start = all.length;
  let chars = 0;
  const last = all.at(-1);
  while (start > 0 && last) {
    const p = all[start - 1] as MrkdwnLine;
    const next = chars + (start < all.length ? 1 : 0) + p.text.length;
    if (start < all.length && rendered(next, p, last) > limit) break;
    chars = next;
    start -= 1;
  }
  return { chunk: all.slice(start), start };
}
