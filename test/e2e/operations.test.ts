import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, startApp } from "../../src/app.js";
import { McpHub } from "../../src/mcp/hub.js";
import { startHealthServer } from "../../src/ops/health.js";
import { Metrics } from "../../src/ops/metrics.js";
import type { Adapter } from "../../src/runtime/contract.js";
import { openStore } from "../../src/store/index.js";
import { LlmEmulator, type RecordedRequest } from "../emulators/llm/index.js";
import { SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { appEnv } from "../support/app-env.js";
import { everythingServer, scratchConfig } from "../support/chat-process.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";
import { alive, childPids, killStarted, startSwitchboard, waitUntil } from "../support/process.js";

const OPENAI_KEY = "sk-test-operations-secret-key";
const SLOW_ANSWER = `${"chunk ".repeat(300)}THE-END`;

function responder(req: RecordedRequest) {
  if (isTitleRequest(req)) return { text: "Operations check" };
  const text = lastUserText(req);
  return text.includes("slow")
    ? { text: SLOW_ANSWER, chunkSize: 6, delayMs: 40 }
    : { text: `You said: ${text}` };
}

const MCP = {
  mcpServers: {
    everything: { command: process.execPath, args: [everythingServer] },
    broken: { command: "/nonexistent/mcp-server" },
  },
};

/** A tool hub without servers: what the health server reads of it is its (empty) list. */
const noToolServers = () =>
  McpHub.start([], {
    callTimeoutMs: 1000,
    connectTimeoutMs: 1000,
    maxOutputChars: 1000,
    blockedServers: [],
    maxRestarts: 0,
  });

describe("health, readiness and metrics", () => {
  it("says which port is taken and what to set when a second process on the machine starts its health server", async () => {
    const store = await openStore(`sqlite://${join(scratchConfig(""), "s.sqlite")}`);
    const hub = await noToolServers();
    const deps = { adapters: () => [], store, hub, metrics: new Metrics("openai") };
    const first = await startHealthServer("127.0.0.1", 0, deps);
    const port = Number(new URL(first.url).port);
    try {
      const second = startHealthServer("127.0.0.1", port, deps);
      await expect(second).rejects.toMatchObject({
        code: "platform_error",
        userMessage: `the health server could not listen on 127.0.0.1:${port}: another process has that port (another Switchboard on this machine?). Set health.port in switchboard.yaml to a free port (0 picks one), or health.enabled: false.`,
      });
      // The first one still answers.
      expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
    } finally {
      await first.close();
      await hub.close();
      await store.close();
    }
  });

  it("/readyz answers 503 until the adapters connect, then 200, and lists MCP servers", async () => {
    const store = await openStore(`sqlite://${join(scratchConfig(""), "s.sqlite")}`);
    const hub = await noToolServers();
    let connected = false;
    const adapter: Adapter = {
      platform: "slack",
      start: async () => undefined,
      stop: async () => undefined,
      ready: () => connected,
    };
    const health = await startHealthServer("127.0.0.1", 0, {
      adapters: () => [adapter],
      store,
      hub,
      metrics: new Metrics("openai"),
    });
    try {
      expect((await fetch(`${health.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${health.url}/readyz`)).status).toBe(503);
      connected = true;
      const ready = await fetch(`${health.url}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({
        ready: true,
        store: true,
        adapters: [{ platform: "slack", connected: true }],
      });
    } finally {
      await health.close();
      await hub.close();
      await store.close();
    }
  });

  describe("a running app", () => {
    let llm: LlmEmulator;
    let slack: SlackEmulator;
    let app: App;
    let dir: string;

    beforeAll(async () => {
      llm = await LlmEmulator.start({ responder });
      slack = await SlackEmulator.start();
      dir = scratchConfig("slack:\n  updateIntervalMs: 250\n", MCP);
      app = await startApp({
        env: appEnv({ dir, llm, slack, apiKey: OPENAI_KEY }),
        cwd: dir,
      });
    }, 60_000);

    afterAll(async () => {
      killStarted();
      await app?.stop();
      await slack?.stop();
      await llm?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it("is ready with a broken tool server, which /readyz lists as failed", async () => {
      const res = await fetch(`${app.health!.url}/readyz`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { mcp: Array<{ name: string; state: string }> };
      expect(body.mcp).toContainEqual(expect.objectContaining({ name: "broken", state: "failed" }));
      expect(body.mcp).toContainEqual(expect.objectContaining({ name: "everything", state: "connected" }));
    });

    it("/metrics shows the counters moving after a turn", async () => {
      const scrape = async () => (await fetch(`${app.health!.url}/metrics`)).text();
      const value = (text: string, series: string) => {
        const line = text.split("\n").find((l) => l.startsWith(series));
        return line ? Number(line.split(" ").at(-1)) : 0;
      };
      const before = await scrape();
      const m = slack.mention("C1", "U_ALICE", "count this turn");
      await waitFor(() => slack.botReplies("C1", m.ts).some((r) => r.text.includes("You said")), {
        timeoutMs: 20_000,
      });
      const turns = 'switchboard_turns_total{platform="slack",outcome="ok"}';
      // The turn is counted when it ends, a moment after its last word reaches Slack.
      let after = await scrape();
      for (let i = 0; i < 100 && value(after, turns) === value(before, turns); i++) {
        await new Promise((r) => setTimeout(r, 100));
        after = await scrape();
      }
      expect(value(after, turns)).toBe(value(before, turns) + 1);
      expect(value(after, 'switchboard_llm_tokens_total{provider="openai",direction="in"}')).toBeGreaterThan(
        0,
      );
      expect(after).toContain('switchboard_mcp_server_up{server="everything",state="connected"} 1');
      expect(after).toContain('switchboard_mcp_server_up{server="broken",state="failed"} 0');
      expect(after).toMatch(/switchboard_first_visible_seconds_count\{platform="slack"\} [1-9]/);
    });
  });
});

describe("stopping `switchboard start` in Slack", () => {
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const output: string[] = [];

  beforeAll(async () => {
    llm = await LlmEmulator.start({ responder });
    slack = await SlackEmulator.start();
    // One edit a second: a cut-off answer and its takeover stay inside Slack's workspace
    // minute for chat.update (50), so the finished answer never waits for a new minute.
    dir = scratchConfig("shutdown:\n  graceMs: 300\nslack:\n  updateIntervalMs: 1000\n", MCP);
    env = { ...appEnv({ dir, llm, slack, apiKey: OPENAI_KEY }), LOG_LEVEL: "debug" };
  });

  afterAll(async () => {
    killStarted();
    await slack?.stop();
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const botText = (channel: string, ts: string) =>
    slack
      .botReplies(channel, ts)
      .map((r) => r.text)
      .join("\n");

  it("on SIGTERM mid-answer ends the reply with a note, leaves no MCP process and exits 0", async () => {
    const bot = startSwitchboard("start", env);
    await waitUntil(() => bot.stderr().includes("Switchboard is running"), "the bot to start");
    const m = slack.mention("C1", "U_ALICE", "slow answer please");
    await waitUntil(() => botText("C1", m.ts).includes("chunk chunk"), "the answer to start streaming");
    const servers = childPids(bot.child.pid!);
    expect(servers.length).toBeGreaterThan(0);
    const signalled = Date.now();
    bot.child.kill("SIGTERM");
    expect(await bot.exited).toBe(0);
    console.info(`slack shutdown: exited ${Date.now() - signalled} ms after SIGTERM`);
    output.push(bot.stdout(), bot.stderr());
    expect(botText("C1", m.ts)).toMatch(/Interrupted by a restart; ask again\.$/);
    expect(botText("C1", m.ts)).not.toContain("THE-END");
    const left = servers.filter(alive);
    if (left.length)
      console.info(execFileSync("ps", ["-o", "pid,stat,cmd", "-p", left.join(",")]).toString());
    expect(left).toEqual([]);
  }, 60_000);

  it("after kill -9 mid-answer, the next start finishes the cut-off reply", async () => {
    const first = startSwitchboard("start", env);
    await waitUntil(() => first.stderr().includes("Switchboard is running"), "the bot to start");
    const m = slack.mention("C1", "U_BOB", "slow again");
    await waitUntil(() => botText("C1", m.ts).includes("chunk chunk"), "the answer to start streaming");
    first.child.kill("SIGKILL");
    await first.exited;
    output.push(first.stdout(), first.stderr());

    const second = startSwitchboard("start", env);
    await waitUntil(() => botText("C1", m.ts).endsWith("THE-END"), "the whole answer", 40_000);
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
    output.push(second.stdout(), second.stderr());
  }, 90_000);

  it("never writes a token or key to its output, even at debug level", () => {
    const all = output.join("\n");
    expect(all.length).toBeGreaterThan(1000);
    expect(all).toContain('"level":20');
    for (const secret of [slack.botToken, slack.appToken, OPENAI_KEY]) expect(all).not.toContain(secret);
  });
});
