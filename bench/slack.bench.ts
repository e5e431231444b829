/**
 * Slack adapter figures against the Slack emulator on loopback, with the adapter's
 * defaults (1.2 s update cadence, 50 writes/min workspace budget) and Slack's limits on.
 * Run: `npx tsx bench/slack.bench.ts` (prints a Markdown section for bench/RESULTS.md).
 */
import { LogLevel } from "@slack/bolt";
import { WebClient } from "@slack/web-api";
import { type Harness, startHarness } from "../test/emulators/slack/adapter-harness.js";
import { waitFor } from "../test/emulators/slack/index.js";
import { ANSWER_1K, median, modelLike } from "./common.js";

const WRITE_METHODS = new Set([
  "chat.postMessage",
  "chat.update",
  "chat.delete",
  "chat.startStream",
  "chat.appendStream",
  "chat.stopStream",
]);
/** The calls that show the first answer text: a posted message or a started stream. */
const FIRST_TEXT = new Set(["chat.postMessage", "chat.startStream"]);

async function latency(h: Harness, runs = 10): Promise<{ ack: number; text: number; rtt: number }> {
  const web = new WebClient(h.emu.botToken, { slackApiUrl: h.emu.apiUrl, logLevel: LogLevel.ERROR });
  const rtts: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await web.auth.test();
    rtts.push(performance.now() - t);
  }
  h.runner.script = modelLike("A short answer.");
  const acks: number[] = [];
  const texts: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = Date.now();
    const m = h.emu.mention("C1", "U_ALICE", `latency ${i}`);
    const ack = await waitFor(() =>
      h.emu.api.calls.find((c) => c.method === "reactions.add" && c.params.timestamp === m.ts),
    );
    const post = await waitFor(() =>
      h.emu.api.calls.find((c) => FIRST_TEXT.has(c.method) && c.ok && c.params.thread_ts === m.ts),
    );
    acks.push(ack.at - t0);
    texts.push(post.at - t0);
    await waitFor(() => h.emu.state.find("C1", m.ts)?.reactions.size === 0);
  }
  return { ack: median(acks), text: median(texts), rtt: median(rtts) };
}

async function oneAnswer(h: Harness): Promise<{ writes: number; limited: number; complete: boolean }> {
  h.runner.script = modelLike(ANSWER_1K);
  const before = h.emu.api.calls.length;
  const limitedBefore = h.emu.rates.limited.length;
  const m = h.emu.mention("C1", "U_ALICE", "a thousand tokens please");
  await waitFor(
    () => h.emu.state.find("C1", m.ts)?.reactions.size === 0 && h.emu.botReplies("C1", m.ts).length > 0,
    {
      timeoutMs: 60_000,
    },
  );
  const calls = h.emu.api.calls.slice(before).filter((c) => WRITE_METHODS.has(c.method));
  const texts = h.emu.botReplies("C1", m.ts).map((r) => r.text);
  return {
    writes: calls.length,
    limited: h.emu.rates.limited.length - limitedBefore,
    complete: texts.join("") === ANSWER_1K,
  };
}

async function crowd(
  h: Harness,
  threads = 20,
): Promise<{ limited: number; byMethod: string; complete: number; seconds: number; streamed: number }> {
  h.runner.script = modelLike(ANSWER_1K.slice(0, 2_000));
  const limitedBefore = h.emu.rates.limited.length;
  const t0 = Date.now();
  const roots = Array.from({ length: threads }, (_, i) => h.emu.mention("C1", `U_USER${i}`, `crowd ${i}`));
  const cleared = (ts: string) =>
    h.emu.api.calls.some((c) => c.method === "reactions.remove" && c.params.timestamp === ts);
  await waitFor(() => roots.every((m) => cleared(m.ts)), { timeoutMs: 180_000 });
  const complete = roots.filter(
    (m) =>
      h.emu
        .botReplies("C1", m.ts)
        .map((r) => r.text)
        .join("") === ANSWER_1K.slice(0, 2_000),
  ).length;
  const limited = h.emu.rates.limited.slice(limitedBefore);
  const byMethod = [...new Set(limited.map((l) => l.method))].map(
    (m) => `${m} ${limited.filter((l) => l.method === m).length}`,
  );
  const streamed = roots.filter((m) => h.emu.botReplies("C1", m.ts).some((r) => r.stream)).length;
  return {
    limited: limited.length,
    byMethod: byMethod.join(", ") || "none",
    streamed,
    complete,
    seconds: (Date.now() - t0) / 1000,
  };
}

async function modeSection(nativeStreaming: boolean): Promise<string> {
  // The adapter's defaults: the shipped cadence and the Tier 3 / Tier 4 workspace budgets.
  const h = await startHarness({
    config: { slack: { updateIntervalMs: 1_200, nativeStreaming } },
    adapter: { writesPerMinute: 50 },
    emulator: { rateLimits: { enabled: true, speed: 1 } },
  });
  try {
    const l = await latency(h);
    const a = await oneAnswer(h);
    const c = await crowd(h);
    const mode = nativeStreaming
      ? "native streaming (chat.startStream / appendStream / stopStream), the default"
      : "post + chat.update (slack.nativeStreaming: false)";
    return [
      `## Slack: ${mode} (emulator on loopback, Socket Mode, adapter defaults)`,
      "",
      "| measure | value |",
      "| --- | --- |",
      `| event -> :eyes: acknowledgement (median of 10) | ${l.ack} ms |`,
      `| event -> first answer text posted (median of 10) | ${l.text} ms |`,
      `| bare Web API round trip (auth.test, median) | ${l.rtt.toFixed(1)} ms |`,
      `| Web API writes for one 1,000-token answer (~4,000 chars, streamed ~5 s) | ${a.writes} |`,
      `| 429s during that answer (Slack's limits on) | ${a.limited} |`,
      `| that answer's final text complete | ${a.complete ? "yes" : "NO"} |`,
      `| 20 threads streaming at once: 429s | ${c.limited} (${c.byMethod}) |`,
      ...(nativeStreaming
        ? [`| 20 threads: replies that streamed natively (rest fell back) | ${c.streamed} of 20 |`]
        : []),
      `| 20 threads: final texts complete | ${c.complete} of 20 (all done in ${c.seconds.toFixed(1)} s) |`,
    ].join("\n");
  } finally {
    await h.stop();
  }
}

export async function runSlackBench(): Promise<string> {
  return [await modeSection(true), "", await modeSection(false)].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runSlackBench().then(
    (md) => {
      console.log(md);
      process.exit(0);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}

export const run = runSlackBench;
