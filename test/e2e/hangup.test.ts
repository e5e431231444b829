/**
 * Closing the terminal that runs `npm run chat` or `npm start` hangs it up: the shell sends
 * SIGHUP to its jobs' process groups. The stdio MCP servers run in sessions of their own
 * (test/e2e/interrupt.test.ts), so the hangup never reaches them: the bot must end them.
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LlmEmulator } from "../emulators/llm/index.js";
import { appEnv } from "../support/app-env.js";
import { repoRoot, scratchConfig } from "../support/chat-process.js";
import { lastUserText } from "../support/llm-text.js";
import { alive, childPids, killStarted, startSwitchboard, waitUntil } from "../support/process.js";

const sdk = (path: string) =>
  pathToFileURL(join(repoRoot, "node_modules/@modelcontextprotocol/sdk/dist/esm", path)).href;

/**
 * An SDK server that outlives the end of its stdin (a timer of its own), as many do: only a
 * signal ends it. It writes its pid to PID_FILE.
 */
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

describe.runIf(process.platform === "linux")("SIGHUP to the terminal chat mid-answer", () => {
  let llm: LlmEmulator;
  let dir: string;
  let pidFile: string;
  /** Process groups a failing test left behind (the servers' wrappers lead them). */
  const groups: number[] = [];
  const slowAnswer = `${"word ".repeat(400)}END`;

  beforeAll(async () => {
    llm = await LlmEmulator.start({
      responder: (req) =>
        lastUserText(req).startsWith("slow")
          ? { text: slowAnswer, chunkSize: 5, delayMs: 30 }
          : { text: `You said: ${lastUserText(req)}` },
    });
    dir = scratchConfig("shutdown:\n  graceMs: 300\n");
    const server = join(dir, "quiet-server.mjs");
    writeFileSync(server, QUIET);
    pidFile = join(dir, "server.pid");
    // Behind a `sh -c` that stays (a command follows it), as `npx` or a wrapper script would be.
    const mcp = {
      mcpServers: {
        quiet: {
          command: "/bin/sh",
          args: ["-c", `"${process.execPath}" "${server}"; true`],
          env: { PID_FILE: pidFile },
        },
      },
    };
    writeFileSync(join(dir, "mcp.json"), JSON.stringify(mcp));
  });

  afterEach(() => {
    for (const group of groups.splice(0)) {
      try {
        process.kill(-group, "SIGKILL");
      } catch {
        // Gone, as it should be.
      }
    }
  });

  afterAll(async () => {
    killStarted();
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("stops as on SIGTERM: the answer ends with the note, the server and its wrapper are gone, exit 0", async () => {
    // Its own group, as the shell's job: the hangup goes to the group, as the shell sends it.
    const chat = startSwitchboard("chat", appEnv({ dir, llm }), { ownGroup: true });
    chat.child.stdin.write("slow answer please\n");
    await waitUntil(() => chat.stdout().includes("word word word"), "the answer to start streaming");
    const wrappers = childPids(chat.child.pid!);
    groups.push(...wrappers);
    expect(wrappers.length).toBe(1);
    const server = Number(readFileSync(pidFile, "utf8"));
    expect(alive(server)).toBe(true);

    process.kill(-chat.child.pid!, "SIGHUP");
    const code = await chat.exited;
    await waitUntil(() => !alive(server) && !wrappers.some(alive), "the servers to end", 5_000).catch(
      () => {},
    );
    expect({
      code,
      signal: chat.child.signalCode,
      running: [server, ...wrappers].filter(alive),
    }).toEqual({ code: 0, signal: null, running: [] });
    expect(chat.stdout()).toContain("Interrupted by a restart; ask again.");
    expect(chat.stdout()).not.toContain("END");
  }, 60_000);
});
