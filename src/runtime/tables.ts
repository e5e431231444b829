import { closesFence, type Fence, parseOpener } from "./split.js";

/**
 * Slack and Discord show a Markdown table as rows of pipes. This turns each GitHub-style
 * table (a header row, then a `|---|` delimiter row, then rows) that is outside a code
 * fence into a fenced code block with aligned columns. Everything else is left as is.
 */
export function tablesToCodeBlocks(markdown: string): string {
  const lines = markdown.split("\n");
  const out: string[] = [];
  let from = 0;
  for (const { at, table } of tablesIn(lines)) {
    out.push(...lines.slice(from, at), ...renderTable(table));
    from = table.end;
  }
  out.push(...lines.slice(from));
  return out.join("\n");
}

/**
 * The header and delimiter rows (with their line breaks) of the table that `markdown` ends
 * inside, outside any code fence, when it ends at a line break after one of its rows: the
 * rows that follow belong to it. Null otherwise.
 */
export function tableOpenAtEnd(markdown: string, from: Fence | null = null): string | null {
  if (!markdown.endsWith("\n")) return null;
  const lines = markdown.slice(0, -1).split("\n");
  for (const { at, table } of tablesIn(lines, from))
    if (table.end === lines.length) return `${lines[at]}\n${lines[at + 1]}\n`;
  return null;
}

/**
 * The tables among `lines` that are outside code fences, in order, with their header row's
 * index. `from`: the fence open where the lines start (a message that goes on inside one).
 */
function* tablesIn(lines: string[], from: Fence | null = null): Generator<{ at: number; table: Table }> {
  let open = from;
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (open) {
      if (closesFence(line, open)) open = null;
    } else {
      open = parseOpener(line);
      const table = open ? null : readTable(lines, i);
      if (table) {
        yield { at: i, table };
        i = table.end;
        continue;
      }
    }
    i++;
  }
}

type Align = "left" | "right" | "center" | "none";

interface Table {
  aligns: Align[];
  rows: string[][];
  /** Index of the first line after the table. */
  end: number;
}

const DELIMITER_CELL = /^:?-+:?$/;

function readTable(lines: string[], at: number): Table | null {
  const header = lines[at]!;
  const delimiter = lines[at + 1];
  if (delimiter === undefined || !isRow(header) || !isRow(delimiter)) return null;
  const cells = splitRow(delimiter);
  if (!cells.every((c) => DELIMITER_CELL.test(c))) return null;
  const head = splitRow(header);
  // GitHub requires the header and delimiter rows to have the same number of cells.
  if (head.length !== cells.length) return null;
  const aligns = cells.map(alignOf);
  const rows = [head];
  let end = at + 2;
  while (end < lines.length && isRow(lines[end]!) && !parseOpener(lines[end]!)) {
    const row = splitRow(lines[end]!);
    rows.push(aligns.map((_, k) => row[k] ?? ""));
    end++;
  }
  return { aligns, rows, end };
}

/** A line that can be a table row: has a pipe, is not blank, is not indented code. */
function isRow(line: string): boolean {
  return line.includes("|") && line.trim() !== "" && !/^( {4}|\t)/.test(line);
}

function splitRow(line: string): string[] {
  let row = line.trim();
  if (row.startsWith("|")) row = row.slice(1);
  if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
  return row.split(/(?<!\\)\|/).map((cell) => plainCell(cell.trim()));
}

/** Inline Markdown would show literally inside a code block: keep the words only. */
function plainCell(cell: string): string {
  return cell
    .replace(/\\\|/g, "|")
    .replace(/`([^`]+)`/g, "$1")
    .replace(/\*\*(.+?)\*\*/g, "$1")
    .replace(/__(.+?)__/g, "$1");
}

function alignOf(cell: string): Align {
  const left = cell.startsWith(":");
  const right = cell.endsWith(":");
  if (left && right) return "center";
  if (right) return "right";
  return left ? "left" : "none";
}

/** Width as a reader counts it, near enough: code points, not UTF-16 units. */
function width(text: string): number {
  return [...text].length;
}

function pad(text: string, size: number, align: Align): string {
  const room = size - width(text);
  if (align === "right") return " ".repeat(room) + text;
  if (align === "center") {
    const left = Math.floor(room / 2);
    return " ".repeat(left) + text + " ".repeat(room - left);
  }
  return text + " ".repeat(room);
}

function renderTable(table: Table): string[] {
  const sizes = table.aligns.map((_, k) => Math.max(1, ...table.rows.map((r) => width(r[k]!))));
  const line = (row: string[]) =>
    row
      .map((cell, k) => pad(cell, sizes[k]!, table.aligns[k]!))
      .join(" | ")
      .trimEnd();
  const [head, ...body] = table.rows;
  const rule = sizes.map((s) => "-".repeat(s)).join("-+-");
  const text = [line(head!), rule, ...body.map(line)];
  // A cell with a run of backticks must not close the block early.
  const longest = Math.max(
    2,
    ...text.map((t) => Math.max(0, ...(t.match(/`+/g) ?? []).map((r) => r.length))),
  );
  const fence = "`".repeat(Math.max(3, longest + 1));
  return [fence, ...text, fence];
}
