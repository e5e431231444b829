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
    log.debug({ server: this.server, stderr: text }, "mcp server stderr");
    const kept = text.length > LINE_CHARS ? `${text.slice(0, LINE_CHARS)}…` : text;
    this.lines.push(kept);
    if (this.lines.length > TAIL_LINES) this.lines.shift();
    this.firstError ??= TELLING.test(text) && !NOT_TELLING.test(text) ? kept : undefined;
  }

  /** Its first error line, else its last line but Node's footer. */
  summary(): string {
    return this.firstError ?? this.lines.filter((l) => !NOT_TELLING.test(l)).at(-1) ?? "";
  }
}
