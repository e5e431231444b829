/**
 * The two bots of the load benchmark, each a process of its own pointed at the emulators
 * of the benchmark's process on 127.0.0.1:
 *
 * - Switchboard: `node <build>/main.js start`, as the container starts it, with the
 *   environment a user gives it (test/support/app-env.ts), a scratch config with SQLite
 *   and no MCP server, and its metrics server on a free port (its event-loop delay is
 *   prom-client's `nodejs_eventloop_lag_p99_seconds`, reset at every scrape).
 * - The naive bot: bench/support/load-naive-bot.ts under tsx, reporting its own delay.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { DiscordEmulator } from "../../test/emulators/discord/index.js";
import type { SlackEmulator } from "../../test/emulators/slack/index.js";
import { appEnv } from "../../test/support/app-env.js";
import { scratchConfig } from "../../test/support/chat-process.js";
import type { AppBuild } from "./load-build.js";
import { repoRoot } from "./load-build.js";
import type { LoadModel } from "./load-model.js";
import { type BotProcess, freePort, spawnBot, waitReady } from "./load-process.js";

export type BotName = "Switchboard" | "naive";

/** Where a bot connects: one emulated platform. */
export type PlatformLink = { slack: SlackEmulator } | { discord: DiscordEmulator };

export interface LoadBot {
  readonly name: BotName;
  readonly proc: BotProcess;
  /** Starts the bot's record of event-loop delays afresh (before a crowd). */
  resetLag(): Promise<void>;
  /** The event-loop delay p99 since `resetLag`, ms (the 10 ms sampling interval included). */
  lagP99Ms(): Promise<number>;
  /** Turns the bot itself counted as ended in an error or interrupted; undefined when it keeps no count. */
  failedTurns(): Promise<number | undefined>;
  stop(): Promise<void>;
}

const READY_MS = 60_000;

/** Sums the samples of a Prometheus metric whose labels contain every `want`. */
export function metricSum(text: string, name: string, want: string[] = []): number {
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name) || !/[\s{]/.test(line[name.length] ?? "")) continue;
    if (want.every((w) => line.includes(w))) total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

/**
 * BENCH_NODE_FLAGS: flags for both bots' node (say `--heap-prof --heap-prof-dir=/tmp/heap`
 * or `--trace-gc`), to look into the two the same way.
 */
function nodeFlags(): string[] {
  return (process.env.BENCH_NODE_FLAGS ?? "").split(/\s+/).filter(Boolean);
}

export async function startSwitchboard(
  build: AppBuild,
  model: LoadModel,
  link: PlatformLink,
): Promise<LoadBot> {
  const port = await freePort();
  // No MCP server: this workload never calls a tool, and the naive bot's idle one is its own process.
  const dir = scratchConfig(`health:\n  host: 127.0.0.1\n  port: ${port}\n`);
  const env = {
    ...appEnv({ dir, llm: model.llm, ...link }),
    LOG_LEVEL: process.env.BENCH_BOT_LOG_LEVEL ?? "error",
  };
  // BENCH_CPU_PROFILE=<dir>: the bot writes a V8 CPU profile there when it stops (for `node --prof`-free digging).
  const profile = process.env.BENCH_CPU_PROFILE
    ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE}`]
    : [];
  const proc = spawnBot("Switchboard", [...nodeFlags(), ...profile, build.main, "start"], env, repoRoot);
  const url = `http://127.0.0.1:${port}`;
  const metrics = async () => (await fetch(`${url}/metrics`)).text();
  try {
    await waitReady(proc, async () => (await fetch(`${url}/readyz`)).ok, READY_MS);
  } catch (err) {
    await proc.kill();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    name: "Switchboard",
    proc,
    // prom-client resets its delay histogram at every scrape: a scrape starts the record.
    resetLag: async () => void (await metrics()),
    lagP99Ms: async () => metricSum(await metrics(), "nodejs_eventloop_lag_p99_seconds") * 1000,
    failedTurns: async () => {
      const text = await metrics();
      return (
        metricSum(text, "switchboard_turns_total", ['outcome="error"']) +
        metricSum(text, "switchboard_turns_total", ['outcome="interrupted"'])
      );
    },
    async stop() {
      await proc.kill(10_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** What the naive process needs to reach the same platform (see load-naive-bot.ts). */
function naiveSpec(model: LoadModel, link: PlatformLink): Record<string, string> {
  const openaiBaseUrl = model.llm.openaiBaseUrl;
  if ("slack" in link) {
    const { apiUrl, botToken, appToken } = link.slack;
    return { platform: "slack", openaiBaseUrl, apiUrl, botToken, appToken };
  }
  return { platform: "discord", openaiBaseUrl, apiUrl: link.discord.apiUrl, token: link.discord.token };
}

/** The child's stdout as lines: `next(match)` resolves with the next line `match` accepts. */
function lineReader(proc: BotProcess) {
  const waiters = new Set<(line: string) => boolean>();
  createInterface({ input: proc.child.stdout }).on("line", (line) => {
    for (const w of waiters) if (w(line)) waiters.delete(w);
  });
  return (match: (line: string) => boolean, timeoutMs = 10_000): Promise<string> =>
    new Promise((resolve, reject) => {
      const waiter = (line: string) => {
        if (!match(line)) return false;
        clearTimeout(timer);
        resolve(line);
        return true;
      };
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        reject(new Error(`no answer from the naive bot within ${timeoutMs} ms.\n${proc.output()}`));
      }, timeoutMs);
      waiters.add(waiter);
    });
}

export async function startNaive(model: LoadModel, link: PlatformLink): Promise<LoadBot> {
  const script = join(repoRoot, "bench/support/load-naive-bot.ts");
  const env = {
    NAIVE_BOT: JSON.stringify(naiveSpec(model, link)),
    LOG_LEVEL: process.env.BENCH_BOT_LOG_LEVEL ?? "error",
  };
  const proc = spawnBot("naive bot", [...nodeFlags(), "--import", "tsx", script], env, repoRoot);
  const next = lineReader(proc);
  try {
    const early = await Promise.race([
      next((l) => l === "ready", READY_MS).then(() => undefined),
      proc.exited.then((how) => `the naive bot exited (${how}) before it was ready.\n${proc.output()}`),
    ]);
    if (early) throw new Error(early);
  } catch (err) {
    await proc.kill();
    throw err;
  }
  const ask = async (command: string, match: (line: string) => boolean) => {
    const answer = next(match);
    proc.child.stdin.write(`${command}\n`);
    return answer;
  };
  return {
    name: "naive",
    proc,
    resetLag: async () => void (await ask("reset", (l) => l === "reset")),
    lagP99Ms: async () =>
      (JSON.parse(await ask("report", (l) => l.startsWith("{"))) as { lagP99Ms: number }).lagP99Ms,
    failedTurns: async () => undefined,
    stop: () => proc.kill(5_000),
  };
}
