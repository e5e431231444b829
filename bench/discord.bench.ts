/**
 * Discord adapter figures against the Discord emulator on loopback, with the adapter's
 * defaults (1.5 s edit cadence, per-channel budget of 3 + 0.6/s) and Discord's limits on
 * at real speed (5 writes per 5 s per channel).
 * Run: `npx tsx bench/discord.bench.ts`, or through `npm run bench`.
 */
import { type Harness, startHarness } from "../src/adapters/discord/harness.test-helper.js";
import { waitFor } from "../test/emulators/discord/index.js";
import { ANSWER_1K, median, modelLike } from "./common.js";

const WRITE = /^\/api\/v10\/channels\/\d+\/messages(\/\d+)?$/;

async function latency(h: Harness, runs = 10): Promise<{ first: number; rtt: number }> {
  const rtts: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await h.adapter.client.rest.get(`/channels/${h.emulator.state.random}`);
    rtts.push(performance.now() - t);
  }
  h.runner.script = modelLike("A short answer.");
  const firsts: number[] = [];
  for (let i = 0; i < runs; i++) {
    const done = h.runner.done.length;
    // A fresh channel per run, so the per-channel budget of one run never delays the next.
    const channel = h.emulator.state.addChannel({ type: 0, name: `latency-${i}` }).id;
    h.emulator.dispatch("CHANNEL_CREATE", { ...h.emulator.channel(channel) }, 1);
    await waitFor(() => h.adapter.client.channels.cache.get(channel));
    const asked = h.emulator.userMessage(channel, `latency ${i}`, { mentionsBot: true });
    const first = await waitFor(() => h.emulator.botMessages(asked.id)[0]);
    firsts.push(first.createdAt - asked.createdAt);
    await waitFor(() => h.runner.done.length > done);
  }
  return { first: median(firsts), rtt: median(rtts) };
}

async function oneAnswer(h: Harness): Promise<{ writes: number; limited: number; complete: boolean }> {
  h.runner.script = modelLike(ANSWER_1K);
  const before = h.emulator.requests.length;
  const limitedBefore = h.emulator.limiter.hits.length;
  const done = h.runner.done.length;
  const asked = h.emulator.userMessage(h.emulator.state.general, "a thousand tokens please", {
    mentionsBot: true,
  });
  await waitFor(() => h.runner.done.length > done, { timeoutMs: 60_000 });
  const writes = h.emulator.requests.slice(before).filter((r) => r.method !== "GET" && WRITE.test(r.path));
  const texts = h.emulator.botMessages(asked.id).map((m) => m.content);
  return {
    writes: writes.length,
    limited: h.emulator.limiter.hits.length - limitedBefore,
    complete: texts.join("") === ANSWER_1K,
  };
}

async function crowd(
  h: Harness,
  threads = 20,
): Promise<{ limited: number; complete: number; seconds: number }> {
  const text = ANSWER_1K.slice(0, 1_900);
  h.runner.script = modelLike(text);
  const limitedBefore = h.emulator.limiter.hits.length;
  const done = h.runner.done.length;
  const t0 = Date.now();
  const asked = Array.from({ length: threads }, (_, i) =>
    h.emulator.userMessage(h.emulator.state.general, `crowd ${i}`, { mentionsBot: true }),
  );
  await waitFor(() => h.runner.done.length >= done + threads, { timeoutMs: 180_000 });
  const complete = asked.filter(
    (m) =>
      h.emulator
        .botMessages(m.id)
        .map((x) => x.content)
        .join("") === text,
  ).length;
  return {
    limited: h.emulator.limiter.hits.length - limitedBefore,
    complete,
    seconds: (Date.now() - t0) / 1000,
  };
}

export async function run(): Promise<Record<string, unknown>> {
  const h = await startHarness({ discord: { editIntervalMs: 1_500 } });
  h.emulator.limiter.options = { ...h.emulator.limiter.options, speed: 1 };
  try {
    const l = await latency(h);
    const a = await oneAnswer(h);
    const c = await crowd(h);
    return {
      "mention -> first bot message in the new thread (median of 10)": `${l.first} ms`,
      "bare REST round trip (GET /channels/{id}, median)": `${l.rtt.toFixed(1)} ms`,
      "REST writes for one 1,000-token answer (~4,000 chars, streamed ~5 s)": a.writes,
      "429s during that answer (Discord's limits on, real speed)": a.limited,
      "that answer's final text complete": a.complete ? "yes" : "NO",
      "20 threads streaming at once: 429s": c.limited,
      "20 threads: final texts complete": `${c.complete} of 20 (all done in ${c.seconds.toFixed(1)} s)`,
    };
  } finally {
    await h.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  run().then(
    (r) => {
      for (const [k, v] of Object.entries(r)) console.log(`| ${k} | ${v} |`);
      process.exit(0);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
