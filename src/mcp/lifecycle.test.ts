import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { McpHub } from "./hub.js";
import { EVERYTHING, isAlive, scriptedServerFile, stdio } from "./testkit.js";

const options = {
  callTimeoutMs: 20_000,
  connectTimeoutMs: 20_000,
  maxOutputChars: 10_000,
  blockedServers: [],
  maxRestarts: 2,
};

const dir = mkdtempSync(join(tmpdir(), "switchboard-mcp-"));
const SCRIPTED = scriptedServerFile(dir);
const hubs: McpHub[] = [];

async function startHub(...args: Parameters<typeof McpHub.start>): Promise<McpHub> {
  const hub = await McpHub.start(...args);
  hubs.push(hub);
  return hub;
}

afterEach(async () => {
  await Promise.all(hubs.splice(0).map((h) => h.close()));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a server that dies", () => {
  it("ends the call in flight at once, restarts the server and serves the next call", async () => {
    const hub = await startHub([stdio("everything", [EVERYTHING])], options);
    const pid = hub.status()[0]?.pid ?? 0;
    let started!: () => void;
    const progressing = new Promise<void>((resolve) => {
      started = resolve;
    });
    // 20 s of work against a 20 s timeout: only a prompt reaction to the death ends this test in time.
    const call = hub.call(
      "everything__trigger-long-running-operation",
      { duration: 20, steps: 100 },
      {
        onProgress: () => started(),
      },
    );
    await progressing;
    process.kill(pid, "SIGKILL");
    const out = await call;
    expect(out.ok).toBe(false);
    expect(out.text).toContain("stopped before it answered (the server process was killed by SIGKILL)");
    // It had the call: repeating a write blindly could run it twice.
    expect(out.text).toContain("may or may not have run; do not assume either");
    expect(out.text).not.toContain("try again");
    expect(hub.status()[0]?.state).toBe("reconnecting");

    // A stopped turn's call does not wait for the restart: it is over before the server is back.
    const stopped = new AbortController();
    stopped.abort();
    const cancelled = await hub.call("everything__echo", { message: "never" }, { signal: stopped.signal });
    expect(cancelled.text).toContain("cancelled");
    expect(hub.status()[0]?.state).toBe("reconnecting");

    // A call made during the restart waits for it.
    const next = await hub.call("everything__echo", { message: "after restart" });
    expect(next).toMatchObject({ ok: true, text: "Echo: after restart" });
    const status = hub.status()[0];
    expect(status?.state).toBe("connected");
    expect(status?.pid).not.toBe(pid);
    expect(isAlive(pid)).toBe(false);
  });

  it("is failed after maxRestarts failed restarts, keeps trying, and is back by itself once it can start", async () => {
    const marker = join(dir, "started-once");
    const changes: string[] = [];
    const hub = await startHub([stdio("flaky", [SCRIPTED], { env: { FAIL_IF_EXISTS: marker } })], options);
    hub.onChange(() => changes.push(hub.status()[0]?.state ?? "?"));
    expect(hub.status()[0]?.state).toBe("connected");

    process.kill(hub.status()[0]?.pid ?? 0, "SIGKILL");
    await vi.waitFor(() => expect(hub.status()[0]?.state).toBe("failed"), { timeout: 15_000, interval: 100 });
    const failed = hub.status()[0];
    expect(failed?.error).toContain("refusing to start");
    expect(failed?.error).toContain("2 restarts in a row failed");
    expect(failed?.retryInMs).toBeLessThanOrEqual(2_000);
    expect(changes).toContain("reconnecting");
    expect(hub.tools()).toEqual([]);
    const refused = await hub.call("flaky__alpha", { item: { id: 1 } });
    expect(refused.ok).toBe(false);

    // Whatever kept it from starting is gone: the next attempt connects, with no one asking.
    rmSync(marker);
    await vi.waitFor(() => expect(hub.status()[0]?.state).toBe("connected"), {
      timeout: 10_000,
      interval: 100,
    });
    expect(existsSync(marker)).toBe(true);
    expect(hub.tools().length).toBeGreaterThan(0);
    expect(hub.status()[0]?.retryInMs).toBeUndefined();

    // By hand, at once (the server refuses a second start while its marker is there).
    rmSync(marker);
    const status = await hub.reconnect("flaky");
    expect(status).toMatchObject({ name: "flaky", state: "connected" });
    expect(await hub.reconnect("unknown")).toBeUndefined();
  });
});

describe("the catalog of a scripted server", () => {
  it("follows every page of tools/list and leaves out task-only tools", async () => {
    const hub = await startHub([stdio("s", [SCRIPTED])], options);
    const tools = hub.tools().map((t) => t.tool);
    expect(tools).toEqual(
      expect.arrayContaining(["alpha", "beta.tool", "beta_tool", "x".repeat(80), "calls", "add-tool"]),
    );
    expect(tools).not.toContain("only-task");
  });

  it("gives colliding and overlong names distinct provider-safe names that call the right tool", async () => {
    const hub = await startHub([stdio("s", [SCRIPTED])], options);
    const byTool = Object.fromEntries(hub.tools().map((t) => [t.tool, t.name]));
    expect(byTool.beta_tool).toBe("s__beta_tool");
    expect(byTool["beta.tool"]).toBe("s__beta_tool_2");
    expect(byTool["x".repeat(80)]).toHaveLength(64);
    expect((await hub.call("s__beta_tool_2", {})).text).toBe("beta.tool {}");
    expect((await hub.call("s__beta_tool", {})).text).toBe("beta_tool {}");
    expect((await hub.call(byTool["x".repeat(80)] ?? "", {})).text).toContain("xxxx {}");
  });

  it("offers the $ref schema inlined and rejects bad nested arguments before calling", async () => {
    const hub = await startHub([stdio("s", [SCRIPTED])], options);
    const alpha = hub.tools().find((t) => t.tool === "alpha");
    expect(JSON.stringify(alpha?.inputSchema)).not.toContain("$ref");
    const bad = await hub.call("s__alpha", { item: { id: "one" } });
    expect(bad.ok).toBe(false);
    expect(bad.text).toContain('"item.id" must be integer, got string');
    expect((await hub.call("s__calls", {})).text).toBe("0");
    expect((await hub.call("s__alpha", { item: { id: 1 } })).ok).toBe(true);
    expect((await hub.call("s__calls", {})).text).toBe("1");
  });

  it("refreshes the catalog when the server announces tools/list_changed", async () => {
    const hub = await startHub([stdio("s", [SCRIPTED])], options);
    let changes = 0;
    hub.onChange(() => changes++);
    expect(hub.tools().map((t) => t.name)).not.toContain("s__gamma");
    await hub.call("s__add-tool", {});
    await vi.waitFor(() => expect(hub.tools().map((t) => t.name)).toContain("s__gamma"), { timeout: 5_000 });
    expect(changes).toBeGreaterThan(0);
    expect((await hub.call("s__gamma", {})).text).toBe("gamma {}");
  });

  it("refreshes the catalog on tools/list_changed from a server that did not declare tools.listChanged", async () => {
    const hub = await startHub([stdio("s", [SCRIPTED], { env: { UNDECLARED_LIST_CHANGED: "1" } })], options);
    await hub.call("s__add-tool", {});
    await vi.waitFor(() => expect(hub.tools().map((t) => t.name)).toContain("s__gamma"), { timeout: 5_000 });
  });
});

describe("a server that starts too slowly", () => {
  it("fails at connectTimeoutMs without holding up the others, and its process is stopped", async () => {
    const pidFile = join(dir, "silent.pid");
    const silentServer =
      "require('fs').writeFileSync(process.argv[1], String(process.pid)); setInterval(() => {}, 1000)";
    const hub = await startHub([stdio("silent", ["-e", silentServer, pidFile]), stdio("s", [SCRIPTED])], {
      ...options,
      connectTimeoutMs: 2_000,
    });
    const [silent, scripted] = hub.status();
    expect(silent).toMatchObject({
      state: "failed",
      error: "did not finish starting within 2 s. It is given 4 s at its next attempt.",
    });
    expect(scripted?.state).toBe("connected");
    const pid = Number(readFileSync(pidFile, "utf8"));
    await vi.waitFor(() => expect(isAlive(pid)).toBe(false), { timeout: 5_000 });
  });
});
