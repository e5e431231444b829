/**
 * Reasoning models (DeepSeek-R1, Qwen QwQ, many local models) write their reasoning as
 * `<think>…</think>` before the answer, in the answer's own text. Only the start of an
 * output can open it: a `<think>` later on is the answer talking about the tag. Models
 * whose chat template already opened the tag in the prompt write only the closing one, so
 * for those the output is held back until a `</think>` ends the reasoning, or until so
 * much has come without one that it was the answer after all (see THINK_HOLD_CHARS).
 */
const OPEN = "<think>";
const CLOSE = "</think>";

/**
 * How much output may pass without a `</think>` before it is taken for the answer. The
 * hold costs nothing when the tag comes (the reasoning is hidden anyway) and delays the
 * answer when it never does (a server that strips reasoning itself, as vLLM's and
 * LM Studio's reasoning parsers do); reasoning longer than this is shown. About 8,000
 * tokens: most reasoning of these models on a chat question is shorter.
 */
export const THINK_HOLD_CHARS = 32_000;

/**
 * Models whose chat template ends the prompt with "<think>\n", as their model cards say:
 * QwQ-32B (not the preview, which reasons untagged), DeepSeek-R1 and its distills since
 * the template update of February 2025, and the Qwen3 "Thinking" models. Ids vary by
 * server ("qwq:32b", "Qwen/QwQ-32B", "deepseek-r1:14b"). Other models are not held: a
 * hold would keep back the first words of every answer shorter than it, and an answer
 * shown as it is written is the point of the live edits.
 */
const OPENS_IN_PROMPT = /qwq(?!.*preview)|deepseek-r1|r1-distill|qwen3.*thinking/i;

/** How much of `model`'s output to hold for a lone `</think>` (0: none). */
export function thinkHoldFor(model: string): number {
  return OPENS_IN_PROMPT.test(model) ? THINK_HOLD_CHARS : 0;
}

/** A run of one output, reasoning (with its tags, as written) or answer. */
export interface ThinkPiece {
  reasoning: boolean;
  text: string;
}

type Phase = "start" | "open" | "held" | "answer";

/**
 * Splits one output into its reasoning and its answer as it streams, so that a tag split
 * across deltas is still caught. Reasoning only ever comes first: once the answer starts,
 * everything is answer.
 */
export class ThinkSplitter {
  private phase: Phase = "start";
  private buffer = "";
  /** In the held phase: how far the buffer has been searched for a closing tag. */
  private searched = 0;
  /** Whether the last `push` entered reasoning (or what may be reasoning). */
  startedThinking = false;

  constructor(private readonly holdChars = 0) {}

  push(delta: string): ThinkPiece[] {
    this.buffer += delta;
    this.startedThinking = false;
    const out: ThinkPiece[] = [];
    let heldNow = false;
    for (;;) {
      const next = this.step(out);
      if (next === this.phase) return out;
      if (next === "open") this.startedThinking = true;
      if (next === "held") heldNow = this.startedThinking = true;
      // Held and let go within one delta: it was not reasoning, so no "Thinking…" either.
      if (this.phase === "held" && heldNow && out.at(-1)?.reasoning !== true) this.startedThinking = false;
      this.phase = next;
    }
  }

  /** The end of the output: what is held back, held text as answer (it never closed), reasoning as reasoning. */
  flush(): ThinkPiece[] {
    const rest = this.buffer;
    this.buffer = "";
    if (!rest) return [];
    return [{ reasoning: this.phase === "open", text: rest }];
  }

  /** Hands on what the current phase can decide, and says which phase comes next. */
  private step(out: ThinkPiece[]): Phase {
    switch (this.phase) {
      case "start": {
        const rest = this.buffer.trimStart();
        if (rest.startsWith(OPEN)) return "open";
        // Only whitespace, or the start of a tag so far: the next delta decides.
        if (OPEN.startsWith(rest)) return "start";
        return this.holdChars > 0 ? "held" : "answer";
      }
      case "open": {
        const at = this.buffer.indexOf(CLOSE);
        const end = at >= 0 ? at + CLOSE.length : this.buffer.length - partialSuffix(this.buffer, CLOSE);
        this.take(out, true, end);
        return at >= 0 ? "answer" : "open";
      }
      case "held": {
        const at = this.buffer.indexOf(CLOSE, Math.max(0, this.searched - CLOSE.length + 1));
        this.searched = this.buffer.length;
        if (at >= 0 && at < this.holdChars) {
          this.take(out, true, at + CLOSE.length);
          return "answer";
        }
        // Past the hold, and past where a closing tag could still start within it.
        if (at >= 0 || this.buffer.length >= this.holdChars + CLOSE.length - 1) return "answer";
        return "held";
      }
      case "answer":
        this.take(out, false, this.buffer.length);
        return "answer";
    }
  }

  private take(out: ThinkPiece[], reasoning: boolean, end: number): void {
    if (end > 0) out.push({ reasoning, text: this.buffer.slice(0, end) });
    this.buffer = this.buffer.slice(end);
  }
}

export interface ThinkFilterResult {
  text: string;
  startedThinking: boolean;
}

/** The answer of one output as it streams, its reasoning left out. */
export class ThinkFilter {
  private readonly splitter: ThinkSplitter;

  constructor(holdChars = 0) {
    this.splitter = new ThinkSplitter(holdChars);
  }

  push(delta: string): ThinkFilterResult {
    const text = answerOf(this.splitter.push(delta));
    return { text, startedThinking: this.splitter.startedThinking };
  }

  /** Whatever is held back at the end of the stream (an unfinished tag is just text). */
  flush(): string {
    return answerOf(this.splitter.flush());
  }
}

/** A whole answer of `model` without its reasoning, by the stream filter's rules. */
export function withoutThinking(text: string, model = ""): string {
  const filter = new ThinkFilter(thinkHoldFor(model));
  return filter.push(text).text + filter.flush();
}

function answerOf(pieces: ThinkPiece[]): string {
  let text = "";
  for (const piece of pieces) if (!piece.reasoning) text += piece.text;
  return text;
}

function partialSuffix(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) {
    if (text.endsWith(tag.slice(0, n))) return n;
  }
  return 0;
}
