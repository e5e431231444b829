import { execFileSync } from "node:child_process";
import { cpus, release, totalmem, type } from "node:os";

export function machine(): Record<string, string | number> {
  const cpu = cpus();
  return {
    cpu: cpu[0]?.model ?? "unknown",
    cpus: cpu.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    os: `${type()} ${release()}`,
  };
}

function git(args: string[], cwd: string): string | undefined {
  try {
    return execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return undefined;
  }
}

/** "abc1234", "abc1234 + uncommitted changes", or "unknown (not a git checkout)". */
export function commitStamp(cwd: string): string {
  const head = git(["rev-parse", "--short", "HEAD"], cwd);
  if (!head) return "unknown (not a git checkout)";
  const dirty = (git(["status", "--porcelain"], cwd) ?? "") !== "";
  return dirty ? `${head} + uncommitted changes` : head;
}
