/**
 * The model of the load benchmark: the LLM emulator on 127.0.0.1 answering every question
 * with the same 200-word answer (llm.ts's ANSWER) streamed about one word per 20 ms (~4 s),
 * or, when the question asks for a short answer, ten words at the same pace. Titles and
 * summaries come at once: this workload measures answers, not after-turn work.
 *
 * "Model time" is measured, not computed: a client on the benchmark's side streams the
 * same answer from the emulator and times it from its request to the stream's end.
 */
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../../test/emulators/llm/index.js";
import { lastUserText } from "../../test/support/llm-text.js";
import { ANSWER, kindOf, prose } from "./llm.js";

export const LONG_ANSWER = ANSWER;
export const SHORT_ANSWER = prose(10);
export const WORD_DELAY_MS = 20;
/** What a question says to get SHORT_ANSWER. */
export const SHORT_ASK = "a short answer please";

export const wordCount = (text: string): number => text.split(/\s+/).filter(Boolean).length;

/**
 * The emulator streams characters, not words: chunks of the answer's mean word length
 * (its space included, rounded up), so that each chunk carries about one word.
 */
export const chunkFor = (text: string): number => Math.ceil(text.length / wordCount(text));

export function answerFor(question: string): string {
  return question.includes(SHORT_ASK) ? SHORT_ANSWER : LONG_ANSWER;
}

function respond(req: RecordedRequest): ScriptedTurn {
  const kind = kindOf(req);
  if (kind === "title") return { text: "Build 731 memory limit", chunkSize: 100 };
  if (kind === "summary") return { text: `- Summary: ${prose(40)}`, chunkSize: 100 };
  const text = answerFor(lastUserText(req));
  return { text, chunkSize: chunkFor(text), delayMs: WORD_DELAY_MS };
}

export interface LoadModel {
  llm: LlmEmulator;
  /** Streams one answer from the emulator as a bot would and returns how long it took, ms. */
  probe(question: string): Promise<number>;
  close(): Promise<void>;
}

async function streamOnce(baseUrl: string, question: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-load-bench-probe" },
    body: JSON.stringify({
      model: "gpt-4o-mini",
      stream: true,
      messages: [{ role: "user", content: question }],
    }),
  });
  if (!res.ok || !res.body) throw new Error(`the model probe got HTTP ${res.status}`);
  for await (const _ of res.body) {
    // Read to the end: the stream's end is the model's last word.
  }
  return performance.now() - t0;
}

export async function startLoadModel(): Promise<LoadModel> {
  const llm = await LlmEmulator.start({ responder: respond });
  return {
    llm,
    probe: (question) => streamOnce(llm.openaiBaseUrl, question),
    close: () => llm.close(),
  };
}
