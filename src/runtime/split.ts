/**
 * Splits a Markdown answer into platform messages of at most `limit` characters (UTF-16
 * code units, which is never less than what Slack or Discord count).
 *
 * A split inside a fenced code block closes the fence at the end of the part and reopens
 * it, with the same opening line, at the start of the next: every message shows balanced
 * code blocks. Those repairs are the only change: the parts' `source` slices concatenate
 * to the input exactly, and `joinParts` recovers it from the texts alone.
 *
 * Repairs: the next part starts with the opening line and "\n". A part cut at a line
 * break ends with the closing run ("```"); a part cut inside a code line (a line longer
 * than the limit) ends with "\n", the run and a space, so that `joinParts` can tell the
 * added line break from an original one (a closing line may end in spaces).
 *
 * Cut preference: after a blank line, after a line break, after a sentence end, after a
 * space, anywhere. A cut never falls inside a fence's opening or closing line, nor
 * between it and its line break (that is what keeps `joinParts` exact), nor between the
 * two halves of a surrogate pair.
 */

/** A fenced code block that is open at some point of the text. */
export interface Fence {
  /** The opening line as written, without its line break (e.g. "```ts"). */
  readonly opener: string;
  /** The run that closes it: the opener's backticks or tildes ("```", "~~~~"). */
  readonly closer: string;
}

export interface MessagePart {
  /** What to send: `source`, plus the fence reopened before it and closed after it. */
  text: string;
  /** The slice of the input that this part carries, unchanged. */
  source: string;
  /** The fence still open where `source` ends (closed in `text`), or null. */
  open: Fence | null;
}

const OPENER = /^ {0,3}(`{3,}|~{3,})(.*)$/;
const CLOSER = /^ {0,3}(`{3,}|~{3,})[ \t]*\r?$/;
/** A cheap pre-check: can a line starting at this index be a fence line at all? */
const FENCE_START = /( {0,3})(`{3}|~{3})/y;

/** The fence a line opens (CommonMark: <= 3 spaces, >= 3 backticks or tildes), or null. */
export function parseOpener(line: string): Fence | null {
  const m = OPENER.exec(line);
  if (!m) return null;
  const run = m[1]!;
  // A backtick fence's info string may not contain backticks ("```a```" is inline code).
  if (run[0] === "`" && m[2]!.includes("`")) return null;
  return { opener: line.endsWith("\r") ? line.slice(0, -1) : line, closer: run };
}

/** True when `line` closes `fence`: the same character, at least as long, nothing after. */
export function closesFence(line: string, fence: Fence): boolean {
  const m = CLOSER.exec(line);
  return !!m && m[1]![0] === fence.closer[0] && m[1]!.length >= fence.closer.length;
}

interface Line {
  start: number;
  /** Index of the line's "\n", or the text's length for the last line. */
  end: number;
  /** The fence open where the line starts. */
  before: Fence | null;
  /** The line opens or closes a fence. */
  fenceLine: boolean;
}

function scanLines(text: string, from: Fence | null): { lines: Line[]; after: Fence | null } {
  const lines: Line[] = [];
  let open = from;
  let start = 0;
  for (;;) {
    const nl = text.indexOf("\n", start);
    const end = nl === -1 ? text.length : nl;
    const line = text.slice(start, end);
    const before = open;
    let fenceLine = false;
    if (open) {
      if (closesFence(line, open)) {
        open = null;
        fenceLine = true;
      }
    } else {
      open = parseOpener(line);
      fenceLine = open !== null;
    }
    lines.push({ start, end, before, fenceLine });
    if (nl === -1) return { lines, after: open };
    start = nl + 1;
  }
}

/** The fence left open at the end of `markdown` (e.g. mid-stream, or never closed), or null. */
export function openFenceAtEnd(markdown: string, from: Fence | null = null): Fence | null {
  return scanLines(markdown, from).after;
}

/** The texts to send, each at most `limit` characters; [] for an empty input. */
export function splitMessage(markdown: string, limit: number): string[] {
  return splitMarkdown(markdown, limit).map((p) => p.text);
}

/**
 * Like `splitMessage`, with each part's source slice and fence state. `from` is the fence
 * open where `markdown` starts (when it continues a text already split elsewhere).
 */
export function splitMarkdown(markdown: string, limit: number, from: Fence | null = null): MessagePart[] {
  if (!Number.isInteger(limit) || limit < 1)
    throw new RangeError(`limit must be a positive integer: ${limit}`);
  if (markdown === "") return [];
  const { lines, after } = scanLines(markdown, from);
  const parts: MessagePart[] = [];
  let pos = 0;
  let open = from;
  for (;;) {
    const reopen = open ? `${open.opener}\n` : "";
    const rest = markdown.slice(pos);
    const tail = repair(after, rest === "" || rest.endsWith("\n"));
    if (reopen.length + rest.length + tail.length <= limit) {
      parts.push({ text: reopen + rest + tail, source: rest, open: after });
      return parts;
    }
    const cut = chooseCut(markdown, lines, pos, limit - reopen.length);
    if (!cut) {
      // No safe cut leaves room for the repairs (a fence line longer than the limit, or a
      // limit smaller than the fence lines): keep the limit, give up balance for this part.
      const at = hardCut(markdown, pos, limit);
      const source = markdown.slice(pos, at);
      parts.push({ text: source, source, open: null });
      return parts.concat(splitMarkdown(markdown.slice(at), limit, null));
    }
    const source = markdown.slice(pos, cut.at);
    const close = repair(cut.open, source.endsWith("\n"));
    parts.push({ text: reopen + source + close, source, open: cut.open });
    pos = cut.at;
    open = cut.open;
  }
}

/**
 * The first part `splitMarkdown` would make, and whether more follow, reading only the
 * lines the first cut can fall in (a cut is chosen from the lines up to `limit`, each read
 * whole): callers that try several limits over a long text pay for a part, not the text.
 */
export function firstPart(
  markdown: string,
  limit: number,
  from: Fence | null = null,
): { part: MessagePart; more: boolean } {
  const end = markdown.indexOf("\n", limit);
  const window = end === -1 ? markdown : markdown.slice(0, end + 1);
  const parts = splitMarkdown(window, limit, from);
  return { part: parts[0]!, more: window !== markdown || parts.length > 1 };
}

/** What closes `open` after a part's source: the run alone when the source ends a line. */
function repair(open: Fence | null, atLineStart: boolean): string {
  if (!open) return "";
  return atLineStart ? open.closer : `\n${open.closer} `;
}

const PARAGRAPH = 0;
const LINE = 1;
const SENTENCE = 2;
const SPACE = 3;
/** Inside a code block: it costs a fence repair, so any prose break that fills half wins. */
const CODE_LINE = 4;
const HARD = 5;

interface Cut {
  at: number;
  open: Fence | null;
}

/**
 * The best cut in (pos, pos + budget]: the most preferred kind of break that still fills
 * at least half the budget, else the latest break of any kind, else a hard cut.
 */
function chooseCut(md: string, lines: Line[], pos: number, budget: number): Cut | null {
  const best: (Cut | undefined)[] = [];
  let i = lineIndexAt(lines, Math.min(pos + budget, md.length - 1));
  for (let c = Math.min(pos + budget, md.length - 1); c > pos; c--) {
    // Below half the budget only the latest break of any kind still matters.
    if (c - pos < budget / 2 && best.length > 0 && best.slice(PARAGRAPH, HARD).some(Boolean)) break;
    while (lines[i]!.start > c) i--;
    const line = lines[i]!;
    const open = line.before;
    if (c - pos + repair(open, c === line.start).length > budget) continue;
    const kind = c === line.start ? lineStartKind(md, lines, i, c) : midLineKind(md, line, pos, c);
    if (kind === null || best[kind]) continue;
    best[kind] = { at: c, open };
    if (kind === PARAGRAPH && c - pos >= budget / 2) break;
  }
  for (let k = PARAGRAPH; k < HARD; k++) {
    const cut = best[k];
    if (cut && cut.at - pos >= budget / 2) return cut;
  }
  const breaks = best.slice(PARAGRAPH, HARD).filter((c): c is Cut => c !== undefined);
  if (breaks.length > 0) return breaks.reduce((a, b) => (b.at > a.at ? b : a));
  return best[HARD] ?? null;
}

function lineStartKind(md: string, lines: Line[], i: number, c: number): number {
  const line = lines[i]!;
  const previous = lines[i - 1];
  // Right after an opening line or right before a closing one, a cut leaves an empty code
  // block in one of the two parts.
  if ((line.fenceLine && line.before) || (previous?.fenceLine && !previous.before)) return HARD;
  if (line.before) return CODE_LINE;
  const blank = md[c - 2] === "\n" || (md[c - 2] === "\r" && md[c - 3] === "\n");
  return blank ? PARAGRAPH : LINE;
}

/** The kind of a cut in the middle of a line, or null when the cut is not safe. */
function midLineKind(md: string, line: Line, pos: number, c: number): number | null {
  if (line.fenceLine) return null;
  const code = md.charCodeAt(c);
  if (code >= 0xdc00 && code <= 0xdfff) return null;
  const open = line.before;
  // Each half becomes a line of its own in the parts: neither may read as a fence line.
  const lastStart = Math.max(line.start, pos);
  if (open) {
    if (looksFenced(md, c) && closesFence(md.slice(c, line.end), open)) return null;
    if (looksFenced(md, lastStart) && closesFence(md.slice(lastStart, c), open)) return null;
    return HARD;
  }
  if (looksFenced(md, c) && parseOpener(md.slice(c, line.end))) return null;
  if (looksFenced(md, lastStart) && parseOpener(md.slice(lastStart, c))) return null;
  const prev = md[c - 1];
  if (prev !== " " && prev !== "\t") return HARD;
  return /[.!?]["'”’)\]]?[ \t]$/.test(md.slice(Math.max(lastStart, c - 3), c)) ? SENTENCE : SPACE;
}

function looksFenced(md: string, at: number): boolean {
  FENCE_START.lastIndex = at;
  return FENCE_START.test(md);
}

function lineIndexAt(lines: Line[], c: number): number {
  let lo = 0;
  let hi = lines.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (lines[mid]!.start <= c) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * A cut `limit` past `pos`, moved off the middle of a surrogate pair: back, or, with a
 * limit of 1 (only `splitToFit` shrinking a part asks that), forward past the whole pair,
 * since half a character is no text on either platform.
 */
function hardCut(md: string, pos: number, limit: number): number {
  const at = Math.min(pos + limit, md.length);
  const code = md.charCodeAt(at);
  if (at === md.length || code < 0xdc00 || code > 0xdfff) return at;
  return at - 1 > pos ? at - 1 : at + 1;
}

/**
 * The input of `splitMessage`, from its parts: removes the fence lines it added. Exact for
 * every input but those that end inside a fence that never closes (then the closer added
 * to the last part may stay) or that end with a closing line followed by a space.
 */
export function joinParts(parts: readonly string[]): string {
  let out = "";
  let open: Fence | null = null;
  parts.forEach((text, i) => {
    let body = text;
    const head = open ? `${open.opener}\n` : "";
    if (head && body.startsWith(head)) body = body.slice(head.length);
    const { lines, after } = scanLines(body, open);
    const last = lines[lines.length - 1]!;
    const fence = last.before;
    const lastLine = body.slice(last.start);
    open = after;
    if (fence && lastLine === `${fence.closer} ` && last.start > 0) {
      body = body.slice(0, last.start - 1);
      open = fence;
    } else if (fence && lastLine === fence.closer && i < parts.length - 1) {
      // An input's own closing line never ends a part that has a successor.
      body = body.slice(0, last.start);
      open = fence;
    }
    out += body;
  });
  return out;
}
