import { readableEnd } from "./continuation.js";
import { type Fence, firstPart, type MessagePart, openFenceAtEnd } from "./split.js";
import { tableOpenAtEnd } from "./tables.js";

/** A part of an answer as it is sent, with the table still open where its source ends. */
export interface FittedPart extends MessagePart {
  /**
   * The header and delimiter rows of a table that goes on in the next part, which repeats
   * them: each message is rendered alone, and rows without their header are only pipes.
   */
  table: string | null;
}

/**
 * `splitMarkdown`, made to fit after `render` (which may lengthen text, e.g. escapes), and
 * with a table cut between two parts given its header again in the second. `from` and
 * `fromTable`: the fence and the table open where `markdown` starts.
 */
export function splitToFit(
  markdown: string,
  max: number,
  from: Fence | null,
  render?: (markdown: string) => string,
  fromTable: string | null = null,
): FittedPart[] {
  const out: FittedPart[] = [];
  let rest = markdown;
  let fence = from;
  let table = fromTable;
  while (rest !== "") {
    // A header that would fill most of a message (a very wide table) is not repeated.
    const head = table !== null && !fence && startsRow(rest) && shown(table, render) <= max / 2 ? table : "";
    const { first, more, text } = firstFitting(rest, max, fence, head, render);
    const open = first.open ? null : tableOpenAtEnd(head + first.source, head ? null : fence);
    out.push({ ...first, text, table: open });
    if (!more) break;
    rest = rest.slice(first.source.length);
    fence = first.open;
    table = open;
  }
  return out;
}

interface Trial {
  first: MessagePart;
  more: boolean;
  /** The first part's text with the repeated header. */
  text: string;
  /** That text's length as rendered. */
  length: number;
  fits: boolean;
}

/**
 * The split of `rest` whose first part, rendered, fits `max`, with the longest budget found.
 * Rendering does not add a fixed number of characters: a table turned into a code block
 * pads every row to its widest cell, so one long cell can make a part several times its
 * source's length, and which rows a part holds decides how wide they all are. Bisected
 * between a budget that fits and one that does not (the first guess in proportion), so it
 * always makes progress; when not even a budget of 1 fits, that part goes as it is.
 */
function firstFitting(
  rest: string,
  max: number,
  fence: Fence | null,
  head: string,
  render?: (markdown: string) => string,
): Trial {
  const trial = (budget: number): Trial => {
    const { part, more } = firstPart(rest, budget, fence);
    const text = head + part.text;
    const length = shown(text, render);
    return { first: part, more, text, length, fits: length <= max };
  };
  let hi = Math.max(1, max - head.length);
  const whole = trial(hi);
  if (whole.fits || hi === 1) return whole;
  let fits: Trial | null = null;
  let lo = 0;
  let probe = Math.floor((hi * whole.text.length) / whole.length);
  while (hi - lo > 1) {
    probe = Math.min(hi - 1, Math.max(lo + 1, probe));
    const t = trial(probe);
    if (t.fits) {
      fits = t;
      lo = probe;
    } else hi = probe;
    probe = (lo + hi) >> 1;
  }
  return fits ?? trial(1);
}

const shown = (markdown: string, render?: (markdown: string) => string): number =>
  (render ? render(markdown) : markdown).length;

function startsRow(text: string): boolean {
  const line = text.slice(0, text.indexOf("\n") + 1 || text.length);
  return line.includes("|") && line.trim() !== "";
}

/** Where an answer's unfinished message starts, and the fence and table open there. */
export class PartCursor {
  base = 0;
  private fence: Fence | null = null;
  private table: string | null = null;

  /** The parts of `text` from here on: all but the last are full. */
  parts(text: string, limit: number, render?: (markdown: string) => string): FittedPart[] {
    return splitToFit(text.slice(this.base), limit, this.fence, render, this.table);
  }

  /** Past a full part, to where the next message starts. */
  pass(part: FittedPart): void {
    this.base += part.source.length;
    this.fence = part.open;
    this.table = part.table;
  }

  /**
   * The part from here to the end of `text`, as an update shows it while the answer
   * streams: up to where it reads whole (see continuation.ts). Null when that is all of it,
   * or when it cannot be cut there into one part with text to show.
   */
  readablePart(text: string, limit: number, render?: (markdown: string) => string): FittedPart | null {
    const cut = readableEnd(text, this.base, text.length, this.fence);
    if (cut === text.length) return null;
    const parts = this.parts(text.slice(0, cut), limit, render);
    const part = parts[0];
    return parts.length === 1 && part && (render?.(part.text) ?? part.text).trim() !== "" ? part : null;
  }

  /** To `end` of `text`: a message ended early at what it shows (see StreamWriter's continuation). */
  moveTo(text: string, end: number): void {
    const source = text.slice(this.base, end);
    const fence = openFenceAtEnd(source, this.fence);
    this.table = fence ? null : tableOpenAtEnd((this.table ?? "") + source, this.table ? null : this.fence);
    this.fence = fence;
    this.base = end;
  }
}
