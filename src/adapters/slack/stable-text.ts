import { closesFence, type Fence, openFenceAtEnd, parseOpener } from "../../runtime/split.js";

/** A line that may belong to a GitHub table (the same test `tablesToCodeBlocks` uses). */
function isRow(line: string): boolean {
  return line.includes("|") && line.trim() !== "" && !/^( {4}|\t)/.test(line);
}

/**
 * How much of a growing Markdown source can be rendered now without its rendering ever
 * changing: everything but a table that may still be growing (a run of pipe lines at the
 * end, outside code fences, and the unfinished line after it) and an unfinished line
 * that already has a pipe. Rendering turns tables into aligned code blocks, and a new
 * row can change every column's width.
 */
export function stableEnd(source: string): number {
  let open: Fence | null = null;
  let runStart = -1;
  let start = 0;
  for (;;) {
    const nl = source.indexOf("\n", start);
    const line = source.slice(start, nl === -1 ? source.length : nl);
    if (nl === -1) {
      if (open) return source.length;
      if (runStart >= 0) return runStart;
      return line.includes("|") ? start : source.length;
    }
    if (open) {
      if (closesFence(line, open)) open = null;
    } else {
      open = parseOpener(line);
      if (!open && isRow(line)) {
        if (runStart < 0) runStart = start;
      } else {
        runStart = -1;
      }
    }
    start = nl + 1;
  }
}

/**
 * The rendered answer as a text that only grows, for append-only native streams: each
 * `update` returns the previous result plus more. In the rare case where rendering would
 * rewrite what is already out (a line without a pipe, partly sent, turns out to be a
 * table's header), the rest of that table goes out as written instead.
 */
export class RenderedText {
  private source = "";
  private rendered = "";
  private stable = 0;
  /** Rendering restarts here after a divergence; `base` is what was out by then. */
  private origin = 0;
  private originFence: Fence | null = null;
  private base = "";

  constructor(private readonly render: (markdown: string) => string) {}

  get text(): string {
    return this.source;
  }

  push(delta: string): void {
    this.source += delta;
  }

  /** The rendered text of everything that is stable now (`final`: of everything). */
  update(final: boolean): string {
    const end = final ? this.source.length : stableEnd(this.source);
    if (end <= this.stable) return this.rendered;
    const next = this.base + this.renderFrom(this.source.slice(this.origin, end));
    if (next.startsWith(this.rendered)) {
      this.rendered = next;
    } else {
      this.rendered += this.source.slice(this.stable, end);
      this.base = this.rendered;
      this.origin = end;
      this.originFence = openFenceAtEnd(this.source.slice(0, end));
    }
    this.stable = end;
    return this.rendered;
  }

  private renderFrom(markdown: string): string {
    const fence = this.originFence;
    if (!fence) return this.render(markdown);
    // Inside a code block nothing is rendered: say so by reopening it, then drop the line.
    return this.render(`${fence.opener}\n${markdown}`).slice(fence.opener.length + 1);
  }
}
