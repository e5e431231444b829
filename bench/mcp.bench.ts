/**
 * MCP hub overhead and start-up time.
 * - callTool through the hub vs the raw SDK Client, `echo` on server-everything (stdio),
 *   N sequential calls each after a warm-up, in alternating rounds; target: <= 1 ms added.
 * - time from McpHub.start to all of everything, filesystem and memory ready; target <= 2 s.
 * Run: npx tsx bench/mcp.bench.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpHub } from "../src/mcp/hub.js";
import { EVERYTHING, FILESYSTEM, MEMORY, stdio } from "../src/mcp/testkit.js";
import { atLeast, atMost, type BenchResult } from "./support/report.js";

const N = 500;
const WARMUP = 50;
const hubOptions = {
  callTimeoutMs: 30_000,
  connectTimeoutMs: 30_000,
  maxOutputChars: 100_000,
  blockedServers: [],
  maxRestarts: 0,
};

const ROUNDS = 10;

/**
 * Both sides stay connected and take turns in rounds of N / ROUNDS calls, so that load
 * from elsewhere on the machine falls on both; the median round difference is the
 * steadiest figure of the hub's own cost.
 */
async function echoOverhead(): Promise<{ rawUs: number; hubUs: number; medianAddedUs: number }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [EVERYTHING],
    stderr: "pipe",
  });
  const client = new Client({ name: "bench", version: "1" });
  const [hub] = await Promise.all([
    McpHub.start([stdio("everything", [EVERYTHING])], hubOptions),
    client.connect(transport),
  ]);
  const raw = (i: number) => client.callTool({ name: "echo", arguments: { message: `m${i}` } });
  const viaHub = async (i: number) => {
    const out = await hub.call("everything__echo", { message: `m${i}` });
    if (!out.ok) throw new Error(out.text);
  };
  const block = async (call: (i: number) => Promise<unknown>, n: number) => {
    const start = performance.now();
    for (let i = 0; i < n; i++) await call(i);
    return ((performance.now() - start) * 1000) / n;
  };
  try {
    await block(raw, WARMUP);
    await block(viaHub, WARMUP);
    const rawUs: number[] = [];
    const hubUs: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      rawUs.push(await block(raw, N / ROUNDS));
      hubUs.push(await block(viaHub, N / ROUNDS));
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const diffs = hubUs.map((h, i) => h - (rawUs[i] ?? 0)).sort((a, b) => a - b);
    return { rawUs: mean(rawUs), hubUs: mean(hubUs), medianAddedUs: ((diffs[4] ?? 0) + (diffs[5] ?? 0)) / 2 };
  } finally {
    await Promise.all([hub.close(), client.close()]);
  }
}

function threeServers(dir: string) {
  return [
    stdio("everything", [EVERYTHING]),
    stdio("filesystem", [FILESYSTEM, dir]),
    stdio("memory", [MEMORY], { env: { MEMORY_FILE_PATH: join(dir, "memory.jsonl") } }),
  ];
}

async function hubReadyMs(dir: string): Promise<{ ms: number; ready: number }> {
  const start = performance.now();
  const hub = await McpHub.start(threeServers(dir), hubOptions);
  const ms = performance.now() - start;
  const ready = hub.status().filter((s) => s.state === "connected").length;
  await hub.close();
  return { ms, ready };
}

/** The floor: the same three servers spawned, initialised and listed by bare SDK clients. */
async function rawReadyMs(dir: string): Promise<number> {
  const start = performance.now();
  const clients = await Promise.all(
    threeServers(dir).map(async (s) => {
      const transport = new StdioClientTransport({
        command: s.command,
        args: s.args,
        env: s.env,
        stderr: "pipe",
      });
      const client = new Client({ name: "bench", version: "1" });
      await client.connect(transport);
      await client.listTools();
      return client;
    }),
  );
  const ms = performance.now() - start;
  await Promise.all(clients.map((c) => c.close()));
  return ms;
}

const round = (n: number, digits = 1) => Number(n.toFixed(digits));

/** Targets: the hub's added cost per call, and three stdio servers ready. */
const MAX_ADDED_MS = 1;
const MAX_READY_MS = 2_000;

export async function run(): Promise<BenchResult> {
  const echo = await echoOverhead();
  const dir = mkdtempSync(join(tmpdir(), "switchboard-bench-"));
  const rawReady = (await rawReadyMs(dir)) + (await rawReadyMs(dir));
  const startup1 = await hubReadyMs(dir);
  const startup2 = await hubReadyMs(dir);
  rmSync(dir, { recursive: true, force: true });
  const readyMs = (startup1.ms + startup2.ms) / 2;
  const connected = Math.min(startup1.ready, startup2.ready);
  return {
    about:
      `callTool of server-everything's echo over stdio, ${N} sequential calls through the hub and as many ` +
      `through a bare SDK Client, in ${ROUNDS} alternating rounds after ${WARMUP} warm-up calls each; and ` +
      "McpHub.start of everything, filesystem and memory until all are connected (mean of two starts), beside " +
      "the same three started by bare SDK clients.",
    figures: {
      calls: N,
      "bare SDK echo, mean per call (µs)": round(echo.rawUs),
      "through the hub, mean per call (µs)": round(echo.hubUs),
      "added by the hub, mean per call (ms)": round((echo.hubUs - echo.rawUs) / 1000, 3),
      "added by the hub, median of the rounds (ms)": round(echo.medianAddedUs / 1000, 3),
      "3 stdio servers ready through the hub (ms)": Math.round(readyMs),
      "3 stdio servers ready with bare SDK clients (ms)": Math.round(rawReady / 2),
      "servers connected": connected,
    },
    checks: [
      atMost(
        "MCP: callTool overhead added by the hub (median round)",
        echo.medianAddedUs / 1000,
        MAX_ADDED_MS,
        "ms",
      ),
      atMost(
        "MCP: callTool overhead added by the hub (mean)",
        (echo.hubUs - echo.rawUs) / 1000,
        MAX_ADDED_MS,
        "ms",
      ),
      atMost("MCP: 3 stdio servers ready", readyMs, MAX_READY_MS, "ms"),
      atLeast("MCP: servers connected at start", connected, 3, "servers"),
    ],
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(JSON.stringify(await run(), null, 2));
}
