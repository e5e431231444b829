import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

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

/** Runs `npm run chat` exactly as a user would, with every line of `input` piped to stdin. */
export function runChat(input: string[], env: NodeJS.ProcessEnv, timeoutMs = 90_000): Promise<ChatRun> {
  return new Promise((resolve, reject) => {
    const child = spawn("npm", ["run", "--silent", "chat"], {
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
