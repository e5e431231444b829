/**
 * The model every platform benchmark talks to: the LLM emulator on 127.0.0.1 answering
 * with a realistic streamed answer (200 words, ~1,200 characters, in 100 chunks 40 ms
 * apart: about 4 s), a tool call through the real "everything" MCP server when the
 * message says "tool", and slow after-turn work (titles and summaries take 2 s each), so
 * that a follow-up in a thread meets the previous turn's title and compression still running.
 */
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../../test/emulators/llm/index.js";
import { lastUserText, toolResultsSinceUser } from "../../test/support/llm-text.js";

const SENTENCES = [
  "The deploy of build 731 failed because the container ran out of memory during the migration step",
  "Raising the limit from two to four gigabytes fixed it on staging, and the job now finishes in six minutes",
  "Before the same change goes to production, the team should check the nightly load test",
  "The load test reads the full customer table, so it is the closest thing to the real migration",
  "If it passes twice in a row, the release can go out on Thursday morning as planned",
  "Otherwise the safer path is to split the migration into batches of ten thousand rows",
  "Batching makes the job slower but keeps memory flat, and a failed batch can simply run again",
  "Either way, the dashboard for the worker pool should stay open while the release runs",
];

/** About `words` words of plain prose (no Markdown), the same on every call. */
export function prose(words: number): string {
  const out: string[] = [];
  let count = 0;
  for (let i = 0; count < words; i++) {
    const s = SENTENCES[i % SENTENCES.length] as string;
    const w = s.split(" ");
    const take = w.slice(0, Math.min(w.length, words - count));
    out.push(`${take.join(" ")}.`);
    count += take.length;
  }
  return out.join(" ");
}

/** The answer to every question: 200 words. */
export const ANSWER = prose(200);
/** The answer after the tool result. */
export const TOOL_ANSWER = `The echo tool answered. ${prose(190)}`;
/** ~4 s per answer: 100 chunks of 12 characters, 40 ms apart (the first 40 ms after the request). */
export const CHUNK_CHARS = 12;
export const CHUNK_DELAY_MS = 40;
/** How long a title or a summary takes the model. */
export const AFTER_TURN_MS = 2_000;

export type RequestKind = "title" | "summary" | "chat";

export function kindOf(req: RecordedRequest): RequestKind {
  if (req.system.startsWith("You name chat threads")) return "title";
  if (req.system.startsWith("You keep the running summary")) return "summary";
  return "chat";
}

/** One title or summary request, from its arrival to the end of its answer (ms since epoch). */
export interface AfterTurnJob {
  kind: "title" | "summary";
  start: number;
  end?: number;
}

export interface BenchModel {
  llm: LlmEmulator;
  jobs: AfterTurnJob[];
  /** True when a job of `kind` was running at `at`. */
  running(kind: AfterTurnJob["kind"], at: number): boolean;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function respond(req: RecordedRequest): ScriptedTurn {
  const asked = lastUserText(req);
  if (/\btool\b/i.test(asked) && toolResultsSinceUser(req).length === 0) {
    return {
      toolCalls: [{ name: "everything__echo", arguments: { message: `echo for: ${asked.slice(0, 60)}` } }],
    };
  }
  const text = toolResultsSinceUser(req).length > 0 ? TOOL_ANSWER : ANSWER;
  return { text, chunkSize: CHUNK_CHARS, delayMs: CHUNK_DELAY_MS };
}

export async function startModel(): Promise<BenchModel> {
  const jobs: AfterTurnJob[] = [];
  const llm = await LlmEmulator.start({
    responder: async (req) => {
      const kind = kindOf(req);
      if (kind === "chat") return respond(req);
      const job: AfterTurnJob = { kind, start: Date.now() };
      jobs.push(job);
      await sleep(AFTER_TURN_MS);
      job.end = Date.now();
      return kind === "title"
        ? { text: "Build 731 memory limit", chunkSize: 100 }
        : { text: `- Summary: ${prose(40)}`, chunkSize: 100 };
    },
  });
  return {
    llm,
    jobs,
    running: (kind, at) => jobs.some((j) => j.kind === kind && j.start <= at && (j.end ?? Infinity) >= at),
    close: () => llm.close(),
  };
}
