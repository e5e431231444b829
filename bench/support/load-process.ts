/**
 * A bot under load runs as its own process, so that what it costs is its own: CPU seconds
 * and peak memory read from /proc (Linux), output kept for the report when it fails, and
 * every process this benchmark starts killed when it ends, whatever happened.
 */
import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from "node:child_process";
import { appendFileSync, readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

/** Clock ticks per second of /proc/<pid>/stat's times (100 on Linux, but asked). */
const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** Output kept per stream: enough to show why a process died, bounded under a long run. */
const KEEP_CHARS = 20_000;

export interface BotProcess {
  readonly pid: number;
  readonly child: ChildProcessWithoutNullStreams;
  /** The last output of the process (stdout and stderr). */
  output(): string;
  /** Resolves with the exit code (or signal) when the process ends. */
  readonly exited: Promise<string>;
  /** Stops the process: SIGTERM, then SIGKILL after `graceMs`. */
  kill(graceMs?: number): Promise<void>;
}

const live = new Set<BotProcess>();

// A benchmark that exits mid-run (run.ts calls process.exit) leaves no bot behind.
process.once("exit", () => {
  for (const b of live) b.child.kill("SIGKILL");
});

/** Starts `node args...` with only `env` (plus PATH and HOME), registered for `killAll`. */
export function spawnBot(name: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): BotProcess {
  const child = spawn(process.execPath, args, {
    cwd,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  // BENCH_BOT_LOG_DIR keeps each bot's whole output (with BENCH_BOT_LOG_LEVEL) for a post-mortem.
  const logDir = process.env.BENCH_BOT_LOG_DIR;
  const file = logDir ? join(logDir, `${name.replace(/\W+/g, "-")}-${child.pid ?? "x"}.log`) : undefined;
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-KEEP_CHARS);
    if (file) appendFileSync(file, d);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const exited = new Promise<string>((resolve) => {
    child.on("close", (code, signal) => resolve(signal ?? String(code)));
    child.on("error", (err) => resolve(`spawn failed: ${err.message}`));
  });
  const bot: BotProcess = {
    pid: child.pid ?? -1,
    child,
    output: () => `${name}:\n${out}`,
    exited,
    async kill(graceMs = 5_000) {
      live.delete(bot);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
  live.add(bot);
  return bot;
}

/** Kills every bot process still running (the benchmark's `finally`). */
export async function killAll(): Promise<void> {
  await Promise.all([...live].map((b) => b.kill(2_000)));
}

/** The file's text, or undefined once the process is gone (a crash is reported, not thrown). */
function proc(pid: number, file: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/${file}`, "utf8");
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) of a `stat` line of /proc (a process's or a thread's); NaN without one. */
function cpuOf(stat: string | undefined): number {
  if (stat === undefined) return Number.NaN;
  // The command name (field 2) may hold spaces: count fields from its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** CPU seconds (user + system) the process has used so far; NaN when it is gone. */
export function cpuSeconds(pid: number): number {
  return cpuOf(proc(pid, "stat"));
}

/** CPU seconds of the process's main thread and of all its other threads (V8's GC helpers, libuv's pool). */
export function cpuByThread(pid: number): { main: number; others: number } {
  let main = 0;
  let others = 0;
  let tasks: string[] = [];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return { main: Number.NaN, others: Number.NaN };
  }
  for (const tid of tasks) {
    const seconds = cpuOf(proc(pid, `task/${tid}/stat`));
    // A thread that ended between the listing and the read.
    if (Number.isNaN(seconds)) continue;
    if (tid === String(pid)) main += seconds;
    else others += seconds;
  }
  return { main, others };
}

function statusKiB(pid: number, key: "VmHWM" | "VmRSS"): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(proc(pid, "status") ?? "");
  return m ? Number(m[1]) : Number.NaN;
}

/** The process's peak resident memory so far, MiB. */
export const peakRssMiB = (pid: number): number => statusKiB(pid, "VmHWM") / 1024;
/** The process's resident memory now, MiB. */
export const rssMiB = (pid: number): number => statusKiB(pid, "VmRSS") / 1024;

/** A TCP port free on 127.0.0.1 now (for the app's metrics server, whose port is configured). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `probe` until it is true; fails early when the process exits, and at `timeoutMs`. */
export async function waitReady(
  bot: BotProcess,
  probe: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  let ended: string | undefined;
  void bot.exited.then((how) => {
    ended = how;
  });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (ended !== undefined)
      throw new Error(`the process exited (${ended}) before it was ready.\n${bot.output()}`);
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`not ready within ${timeoutMs} ms.\n${bot.output()}`);
    await sleep(100);
  }
}
