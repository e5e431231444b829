import { type Fence, openFenceAtEnd, parseOpener } from "./split.js";

/*
 * An answer's last message may be frozen at what its last update showed: when its final
 * edit's budget is spent (Slack's workspace-wide chat.update), the rest goes on in a new
 * message (see StreamWriter's continuation), and no edit can mend the first one. So an
 * update while the answer streams never shows a table row half written (`bb | 2` for a
 * cell that reads 22), a fence line, or a link, a code span, a **bold** or ~~struck~~ run
 * left open: it stops before them. Wherever the edits stop, both messages then render
 * whole, and nothing is shown twice.
 *
 * A plain word or a code line may still end an update half written, as the model's deltas
 * leave it: the next message reads on from it. Holding back the last word of every update
 * would also be safe, but every streamed message (and every test of a reply cut off
 * mid-answer) would then lag a word behind what was written.
 */

/**
 * Where an update showing `text` from `base` up to `end` (`fence` open at `base`) may stop:
 * `end`, unless its last line is a table row, a fence line or has an inline construct
 * open; then the last space before the construct, or else the line's start (the last line
 * break that leaves a message with text, not ending on a code block's opening line).
 * `end` when there is no such point.
 */
export function readableEnd(text: string, base: number, end: number, fence: Fence | null): number {
  if (text[end - 1] === "\n" && lineBreakSafe(text, base, end, fence)) return end;
  const lineStart = Math.max(base, text.lastIndexOf("\n", end - 1) + 1);
  if (lineStart < end) {
    const line = text.slice(lineStart, end);
    const inCode = openFenceAtEnd(text.slice(base, lineStart), fence) !== null;
    // A line of only backticks or tildes so far may yet open or close a code block.
    const fenceLine = /^ {0,3}(`{3,}|~{3,})/.test(line) || /^ {0,3}(`+|~+)$/.test(line);
    if (!fenceLine && inCode) return end;
    if (!fenceLine && !line.includes("|")) {
      const word = lastWordBreak(text, lineStart, end);
      if (word > lineStart) return word;
    }
  }
  for (let nl = lineStart - 1; nl >= base; nl = nl === 0 ? -1 : text.lastIndexOf("\n", nl - 1))
    if (text[nl] === "\n" && lineBreakSafe(text, base, nl + 1, fence)) return nl + 1;
  return end;
}

/** After a line break, unless the message would hold only whitespace or end on a code block's opening line. */
function lineBreakSafe(text: string, base: number, c: number, fence: Fence | null): boolean {
  const before = text.slice(base, c);
  if (before.trim() === "") return false;
  const lastLine = before.slice(before.lastIndexOf("\n", before.length - 2) + 1, -1);
  if (!parseOpener(lastLine)) return true;
  return !openFenceAtEnd(before, fence) || !!openFenceAtEnd(before.slice(0, -lastLine.length - 1), fence);
}

/**
 * `end` when every inline construct begun on the line from `lineStart` is closed there
 * (code spans, strong emphasis, strikethrough, links, autolinks), else the last cut
 * after a space where they all were; `lineStart` when there is none, nor right after a
 * list marker.
 */
function lastWordBreak(text: string, lineStart: number, end: number): number {
  const marker = /^\s*([*+-]|\d+[.)])\s+/.exec(text.slice(lineStart, end))?.[0].length ?? 0;
  let best = lineStart;
  let code = false;
  let strong = false;
  let strike = false;
  let link = 0;
  let autolink = false;
  for (let i = lineStart + marker; i < end; i++) {
    const ch = text[i] ?? "";
    const pair = text.slice(i, i + 2);
    if (ch === "`") code = !code;
    else if (code) continue;
    else if (pair === "**" || pair === "__") {
      strong = !strong;
      i++;
    } else if (pair === "~~") {
      strike = !strike;
      i++;
    } else if (ch === "[") link = 1;
    else if (pair === "](" && link === 1) {
      link = 2;
      i++;
    } else if ((ch === "]" && link === 1) || (ch === ")" && link === 2)) link = 0;
    else if (text.startsWith("<http", i)) autolink = true;
    else if (ch === ">") autolink = false;
    if (ch === " " || ch === "\t") {
      if (!code && !strong && !strike && !link && !autolink && i > lineStart + marker) best = i + 1;
    }
  }
  if (!code && !strong && !strike && !link && !autolink && end > lineStart + marker) return end;
  return best;
}
