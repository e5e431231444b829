/**
 * Discord: the real app against the Discord emulator (gateway + REST, Discord's rate
 * limits at real speed), beside a naive bot on its own emulator; see
 * bench/support/platform-bench.ts. Run alone: `npm run bench -- discord`.
 */
import { naiveOnDiscord, switchboardOnDiscord } from "./support/discord.js";
import { platformBench } from "./support/platform-bench.js";
import type { BenchResult } from "./support/report.js";

export function run(): Promise<BenchResult> {
  return platformBench({
    name: "Discord",
    writesHow: "a thread per mention, post + edit every 1.5 s, its defaults",
    switchboard: switchboardOnDiscord,
    naive: naiveOnDiscord,
  });
}
