/**
 * Reasoning models (DeepSeek-R1, Qwen QwQ, many local models) stream their reasoning as
 * `<think>…</think>` inside the answer text. This filter removes it incrementally, so a
 * tag split across deltas is still caught, and reports when thinking starts.
 */
const OPEN = "<think>";
const CLOSE = "</think>";

export interface ThinkFilterResult {
  text: string;
  startedThinking: boolean;
}

export class ThinkFilter {
  private inside = false;
  private pending = "";

  push(delta: string): ThinkFilterResult {
    let input = this.pending + delta;
    this.pending = "";
    let out = "";
    let startedThinking = false;
    while (input.length > 0) {
      const tag = this.inside ? CLOSE : OPEN;
      const at = input.indexOf(tag);
      if (at >= 0) {
        if (!this.inside) out += input.slice(0, at);
        input = input.slice(at + tag.length);
        if (!this.inside) startedThinking = true;
        this.inside = !this.inside;
        continue;
      }
      // Hold back a possible partial tag at the end; it may complete in the next delta.
      const keep = partialSuffix(input, tag);
      if (!this.inside) out += input.slice(0, input.length - keep);
      this.pending = input.slice(input.length - keep);
      input = "";
    }
    return { text: out, startedThinking };
  }

  /** Whatever is held back at the end of the stream (an unfinished tag is just text). */
  flush(): string {
    const rest = this.inside ? "" : this.pending;
    this.pending = "";
    return rest;
  }
}

function partialSuffix(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) {
    if (text.endsWith(tag.slice(0, n))) return n;
  }
  return 0;
}
