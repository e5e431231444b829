import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from "node:child_process";
import { cpSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot, switchboardArgs } from "./chat-process.js";

export interface Running {
  child: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

const started = new Set<ChildProcessWithoutNullStreams>();

/** Kills whatever a failed test left running (call it in afterAll). */
export function killStarted(): void {
  for (const child of started)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  started.clear();
}

/** `node <build>/main.js <command>` in one process (no npm or tsx wrapper), so signals reach it directly. */
export function startSwitchboard(
  command: "start" | "chat" | string[],
  env: NodeJS.ProcessEnv,
  opts: { ownGroup?: boolean } = {},
): Running {
  // ownGroup: the bot leads a process group, as a shell's foreground job does, for a test to
  // signal the whole group as Ctrl+C in a terminal would.
  const child = spawn(process.execPath, switchboardArgs(command), {
    cwd: repoRoot,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    detached: opts.ownGroup === true,
  });
  started.add(child);
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/**
 * Leaves only the production dependencies in `dir` (which holds package.json and
 * package-lock.json), as the Dockerfile's build stage does: the project's installed
 * node_modules, then `npm prune --omit=dev`. A fresh `npm ci --omit=dev` would compile
 * better-sqlite3's native addon again from source, a minute and a half on two cores.
 */
export function installProductionDependencies(dir: string): void {
  cpSync(join(repoRoot, "node_modules"), join(dir, "node_modules"), {
    recursive: true,
    verbatimSymlinks: true,
    // This run's build and other caches are not dependencies.
    filter: (src) => !src.startsWith(join(repoRoot, "node_modules/.cache")),
  });
  execFileSync("npm", ["prune", "--omit=dev", "--no-audit", "--no-fund"], { cwd: dir, stdio: "pipe" });
}

export async function waitUntil(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function childPids(pid: number): number[] {
  try {
    const out = execFileSync("ps", ["-o", "pid=", "--ppid", String(pid)]).toString();
    return out.trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** True while the process runs; a zombie (exited, not yet reaped by a PID 1 that never reaps) is not alive. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}
