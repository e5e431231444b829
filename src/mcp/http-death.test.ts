import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { McpHub } from "./hub.js";
import { startEverythingHttp, stopChild } from "./testkit.js";

describe("an HTTP server that dies during a call", () => {
  let server: { child: ChildProcess; url: string };
  let hub: McpHub;

  beforeAll(async () => {
    server = await startEverythingHttp();
    hub = await McpHub.start(
      [{ name: "web", transport: "http", url: server.url, headers: {}, disabled: false }],
      {
        // Far longer than the test waits: the call must end because the server died, not for its timeout.
        callTimeoutMs: 60_000,
        connectTimeoutMs: 10_000,
        maxOutputChars: 10_000,
        blockedServers: [],
        maxRestarts: 5,
      },
    );
  });

  afterAll(async () => {
    await hub?.close();
    if (server) await stopChild(server.child);
  });

  it("ends the call within seconds as a lost connection, and shows the server reconnecting", async () => {
    let progressed: () => void = () => {};
    const running = new Promise<void>((resolve) => {
      progressed = resolve;
    });
    const call = hub.call(
      "web__trigger-long-running-operation",
      { duration: 60, steps: 60 },
      { onProgress: () => progressed() },
    );
    await running;
    const killedAt = Date.now();
    await stopChild(server.child);
    const out = await call;
    expect(Date.now() - killedAt).toBeLessThan(5_000);
    expect(out.ok).toBe(false);
    expect(out.text).toMatch(/stopped before it answered|broke before it answered/);
    expect(out.text).toMatch(/may or may not have run/);
    expect(hub.status()[0]?.state).toBe("reconnecting");
  });
});
