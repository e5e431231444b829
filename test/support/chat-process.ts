import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inject } from "vitest";

export const repoRoot = join(import.meta.dirname, "../..");
export const everythingServer = join(
  repoRoot,
  "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
);
/** An mcp.json with only the reference "everything" server, run by this Node. */
export const everythingMcp = {
  mcpServers: { everything: { command: process.execPath, args: [everythingServer] } },
};

export interface ChatRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A scratch folder with a config file and an mcp.json, as a user would write them. */
export function scratchConfig(yaml: string, mcp: unknown = { mcpServers: {} }): string {
  const dir = mkdtempSync(join(tmpdir(), "sb-chat-"));
  // Port 0: test files run in parallel, and each app's health server needs its own port.
  const withHealth = /^health:/m.test(yaml) ? yaml : `${yaml}\nhealth:\n  port: 0\n`;
  writeFileSync(join(dir, "switchboard.yaml"), withHealth);
  writeFileSync(join(dir, "mcp.json"), JSON.stringify(mcp));
  return dir;
}

/**
 * The Node arguments that start `<command>` from this run's compiled `main.js` (built once
 * by test/support/build.ts with `tsc -p tsconfig.build.json`), as the container starts
 * `node dist/main.js`.
 */
export function switchboardArgs(command: "start" | "chat" | string[]): string[] {
  return [
    "--enable-source-maps",
    inject("switchboardMain"),
    ...(Array.isArray(command) ? command : [command]),
  ];
}

export interface ChatOptions {
  /**
   * How the chat starts. "npm": `npm run chat`, exactly as the README tells a user (npm, then
   * tsx compiling src/ on the fly), which costs a second or two of CPU at each start, so one
   * test keeps it. "node" (the default): `node <build>/main.js chat` (see switchboardArgs).
   */
  via?: "npm" | "node";
  timeoutMs?: number;
}

/** Runs the terminal chat as a user would, with every line of `input` piped to stdin. */
export function runChat(input: string[], env: NodeJS.ProcessEnv, opts: ChatOptions = {}): Promise<ChatRun> {
  const { via = "node", timeoutMs = 90_000 } = opts;
  return new Promise((resolve, reject) => {
    const [command, args] =
      via === "npm" ? ["npm", ["run", "--silent", "chat"]] : [process.execPath, switchboardArgs("chat")];
    const child = spawn(command, args, {
      cwd: repoRoot,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: "warn", ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`chat did not exit within ${timeoutMs} ms.\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, timeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(`${input.join("\n")}\n`);
  });
}
