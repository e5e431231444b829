import { type Fence, type MessagePart, openFenceAtEnd, splitMarkdown } from "./split.js";
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
  let limit = max;
  while (rest !== "") {
    // A header that would fill most of a message (a very wide table) is not repeated.
    const head = table !== null && !fence && startsRow(rest) && shown(table, render) <= max / 2 ? table : "";
    const parts = splitMarkdown(rest, Math.max(1, limit - head.length), fence);
    const first = parts[0]!;
    const text = head + first.text;
    const over = render ? render(text).length - max : text.length - max;
    if (over > 0 && limit > 1) {
      limit = Math.max(1, limit - over);
      continue;
    }
    const open = first.open ? null : tableOpenAtEnd(head + first.source, head ? null : fence);
    out.push({ ...first, text, table: open });
    if (parts.length === 1) break;
    rest = rest.slice(first.source.length);
    fence = first.open;
    table = open;
    limit = max;
  }
  return out;
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

  /** To `end` of `text`: a message ended early at what it shows (see StreamWriter's continuation). */
  moveTo(text: string, end: number): void {
    const source = text.slice(this.base, end);
    const fence = openFenceAtEnd(source, this.fence);
    this.table = fence ? null : tableOpenAtEnd((this.table ?? "") + source, this.table ? null : this.fence);
    this.fence = fence;
    this.base = end;
  }
}
