/**
 * Slack: the real app against the Slack emulator (Socket Mode, Slack's rate limits at
 * real speed), beside a naive bot on its own emulator; see bench/support/platform-bench.ts.
 * Run alone: `npm run bench -- slack` (BENCH_RUNS, BENCH_THREADS, BENCH_TOOL_RUNS change the sizes).
 */
import { platformBench } from "./support/platform-bench.js";
import type { BenchResult } from "./support/report.js";
import { naiveOnSlack, switchboardOnSlack } from "./support/slack.js";

export function run(): Promise<BenchResult> {
  return platformBench({
    name: "Slack",
    writesHow:
      "Socket Mode, native streaming with chat.startStream / appendStream / stopStream, its defaults",
    switchboard: switchboardOnSlack,
    naive: naiveOnSlack,
  });
}
