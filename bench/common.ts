import type { Inbound } from "../src/runtime/contract.js";

/** ~1,000 tokens of English prose (about 4 characters per token). */
export const ANSWER_1K = Array.from(
  { length: 80 },
  (_, i) => `This is sentence ${i + 1} of a thousand-token answer.`,
).join(" ");

/** Streams `text` like a model at ~`charsPerSec`. */
export function modelLike(text: string, charsPerSec = 800): (inbound: Inbound) => Promise<void> {
  return async (inbound) => {
    const sink = inbound.reply.stream();
    const step = 40;
    for (let i = 0; i < text.length; i += step) {
      sink.write(text.slice(i, i + step));
      await new Promise((r) => setTimeout(r, (step / charsPerSec) * 1000));
    }
    await sink.finish();
  };
}

export const median = (xs: number[]) =>
  [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
