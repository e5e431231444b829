import { StringDecoder } from "node:string_decoder";
import { log } from "../log.js";

const TAIL_LINES = 5;
const LINE_CHARS = 300;
/** A line of a server's output that says what went wrong. */
const TELLING = /\b(error|exception|fatal|panic|denied|refused|not found|cannot|could not|failed|invalid)\b/i;
/** Lines that never do: stack frames, Node's version footer, the caret under a source line. */
const NOT_TELLING = /^\s+at\s|^Node\.js v\d|^\s*\^+\s*$/;

/** What a stdio server said on stderr during one start-up attempt: enough to say why it died. */
export class StderrTail {
  private lines: string[] = [];
  /** The first line of this attempt's output that reads as an error. */
  private firstError: string | undefined;

  constructor(private readonly server: string) {}

  add(line: string): void {
    const text = line.trimEnd();
    if (text === "") return;
    const kept = text.length > LINE_CHARS ? `${text.slice(0, LINE_CHARS)}…` : text;
    log.debug({ server: this.server, stderr: kept }, "mcp server stderr");
    this.lines.push(kept);
    if (this.lines.length > TAIL_LINES) this.lines.shift();
    this.firstError ??= TELLING.test(text) && !NOT_TELLING.test(text) ? kept : undefined;
  }

  /** Its first error line, else its last line but Node's footer. */
  summary(): string {
    return this.firstError ?? this.lines.filter((l) => !NOT_TELLING.test(l)).at(-1) ?? "";
  }
}

/** Of a line longer than this, the rest is dropped until its end: only its start is ever kept. */
export const MAX_LINE_CHARS = 4_096;

/**
 * Splits a server's stderr into lines for `onLine`. A carriage return ends a line too
 * (progress bars redraw one with it, and may never print a newline), and a line's
 * overlong rest is dropped as it comes, so a server that writes without end costs a
 * bounded buffer. Characters split between two chunks are joined again.
 */
export function stderrLines(onLine: (line: string) => void): (chunk: Buffer) => void {
  const decoder = new StringDecoder("utf8");
  let partial = "";
  let overlong = false;
  return (chunk) => {
    const parts = (partial + decoder.write(chunk)).split(/\r\n|\r|\n/);
    partial = parts.pop() ?? "";
    for (const line of parts) {
      if (!overlong) onLine(line);
      overlong = false;
    }
    if (partial.length > MAX_LINE_CHARS) {
      if (!overlong) onLine(partial.slice(0, MAX_LINE_CHARS));
      overlong = true;
      partial = "";
    }
  };
}
