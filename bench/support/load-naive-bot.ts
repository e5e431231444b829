/**
 * The naive bot as a process of its own, for the load benchmark (bench/load.bench.ts):
 * `node --import tsx bench/support/load-naive-bot.ts` with NAIVE_BOT set to a JSON
 * `{ platform, openaiBaseUrl, ...target }` (see load-naive-bots.ts for the targets).
 *
 * It prints `ready` once connected. On stdin, `reset` starts its event-loop delay record
 * afresh (answered `reset`), and `report` prints `{"lagP99Ms": ...}`: the delay measured
 * as prom-client measures the app's (monitorEventLoopDelay, 10 ms resolution), so the two
 * bots' figures compare. SIGTERM, or the end of stdin, stops it.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createInterface } from "node:readline";
import {
  type NaiveDiscordTarget,
  type NaiveSlackTarget,
  type RunningNaiveBot,
  startNaiveDiscordBot,
  startNaiveSlackBot,
} from "./load-naive-bots.js";

type Spec =
  | ({ platform: "slack"; openaiBaseUrl: string } & NaiveSlackTarget)
  | ({ platform: "discord"; openaiBaseUrl: string } & NaiveDiscordTarget);

const spec = JSON.parse(process.env.NAIVE_BOT ?? "{}") as Spec;
const lag = monitorEventLoopDelay({ resolution: 10 });
lag.enable();

const bot: RunningNaiveBot =
  spec.platform === "slack"
    ? await startNaiveSlackBot(spec, spec.openaiBaseUrl)
    : await startNaiveDiscordBot(spec, spec.openaiBaseUrl);

createInterface({ input: process.stdin }).on("line", (line) => {
  if (line === "reset") {
    lag.reset();
    process.stdout.write("reset\n");
  } else if (line === "report") {
    process.stdout.write(`${JSON.stringify({ lagP99Ms: lag.percentile(99) / 1e6 })}\n`);
  }
});

const stop = () => void bot.stop().finally(() => process.exit(0));
process.on("SIGTERM", stop);
// The benchmark's end of stdin closes when it is gone, however it went: do not outlive it.
process.stdin.on("end", stop);
process.stdout.write("ready\n");
