import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { StdioServerConfig } from "./servers.js";
import { childOf, closeClient, createTransport } from "./transport.js";

const repo = join(import.meta.dirname, "../..");
const sdk = (path: string) =>
  pathToFileURL(join(repo, "node_modules/@modelcontextprotocol/sdk/dist/esm", path)).href;

/** An SDK server that outlives the end of its stdin (a timer of its own), and writes its pid to PID_FILE. */
const QUIET = `
import { writeFileSync } from "node:fs";
import { McpServer } from "${sdk("server/mcp.js")}";
import { StdioServerTransport } from "${sdk("server/stdio.js")}";
writeFileSync(process.env.PID_FILE, String(process.pid));
setInterval(() => {}, 1_000);
const server = new McpServer({ name: "quiet", version: "1.0.0" });
server.registerTool("nothing", {}, async () => ({ content: [] }));
await server.connect(new StdioServerTransport());
`;

const dir = mkdtempSync(join(tmpdir(), "switchboard-groups-"));
const quiet = join(dir, "quiet-server.mjs");
writeFileSync(quiet, QUIET);
let runs = 0;
/** Group leaders a failing test left behind. */
const leaders: number[] = [];

/** The quiet server behind a `sh -c` that stays (a command follows it): the pid the bot knows is the shell's. */
function wrapped(): StdioServerConfig & { pidFile: string } {
  const pidFile = join(dir, `server-${++runs}.pid`);
  return {
    name: "quiet",
    transport: "stdio",
    command: "/bin/sh",
    args: ["-c", `"${process.execPath}" "${quiet}"; true`],
    env: { PID_FILE: pidFile },
    disabled: false,
    pidFile,
  };
}

/** Gone, or a zombie nobody has reaped yet (PID 1 in a container may never). */
function gone(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z") ?? true;
  } catch {
    return true;
  }
}

async function goneSoon(pid: number): Promise<boolean> {
  for (let i = 0; i < 40 && !gone(pid); i++) await sleep(50);
  return gone(pid);
}

afterEach(() => {
  for (const pid of leaders.splice(0)) {
    // -0 would be our own group.
    if (!(pid > 0)) continue;
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // Gone, as it should be.
    }
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.runIf(process.platform === "linux")("a stdio server started through a wrapper", () => {
  it("is ended by closeClient with what the wrapper started", async () => {
    const config = wrapped();
    const transport = createTransport(config, () => {});
    const client = new Client({ name: "test", version: "1" });
    await client.connect(transport);
    const shell = childOf(transport)?.pid ?? 0;
    leaders.push(shell);
    const server = Number(readFileSync(config.pidFile, "utf8"));
    expect(server).not.toBe(shell);

    await closeClient(client, childOf(transport));
    expect(await goneSoon(shell)).toBe(true);
    expect(await goneSoon(server)).toBe(true);
  });

  // A second Ctrl+C and fail() call process.exit; a bug's throw ends the process as Node does.
  it.each([
    ["process.exit(1)", "process.exit(1);"],
    ["an uncaught exception", 'setTimeout(() => { throw new Error("a bug"); });'],
    ["an unhandled rejection", 'Promise.reject(new Error("a bug"));'],
  ])("is ended, wrapper and all, when the bot exits without closing the hub: %s", async (_, ending) => {
    const config = wrapped();
    const script = join(dir, "exits.mjs");
    const { pidFile, ...server } = config;
    writeFileSync(
      script,
      `import { McpHub } from ${JSON.stringify(pathToFileURL(join(repo, "src/mcp/hub.ts")).href)};
const hub = await McpHub.start([${JSON.stringify(server)}], {
  callTimeoutMs: 10000, connectTimeoutMs: 10000, maxOutputChars: 1000, blockedServers: [], maxRestarts: 1,
});
process.stdout.write(String(hub.status()[0]?.pid ?? ""));
// No close, no graceful stop.
${ending}
`,
    );
    const bot = spawn(process.execPath, ["--import", "tsx", script], {
      cwd: repo,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: "error" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    bot.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    bot.stderr.on("data", (d: Buffer) => {
      err += d.toString();
    });
    const [code] = await once(bot, "exit");
    const shell = Number(out);
    leaders.push(shell);
    expect(code, err).toBe(1);
    expect(shell).toBeGreaterThan(0);
    expect(existsSync(pidFile)).toBe(true);
    expect(await goneSoon(shell)).toBe(true);
    expect(await goneSoon(Number(readFileSync(pidFile, "utf8")))).toBe(true);
  });
});
