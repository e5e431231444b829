import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { McpHub } from "./hub.js";
import { EVERYTHING } from "./testkit.js";

describe("a server slower to start than mcp.connectTimeoutMs", () => {
  const folder = mkdtempSync(join(tmpdir(), "switchboard-slow-"));
  const spawns = join(folder, "spawns");
  let hub: McpHub | undefined;

  afterAll(async () => {
    await hub?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it("is given longer at each attempt until it connects, and its timeout says what it printed", async () => {
    // Eight seconds of warming up, then server-everything, for a limit of three.
    const script = `echo spawn >> ${spawns}; echo "warming up the index" >&2; sleep 8; exec "${process.execPath}" "${EVERYTHING}"`;
    hub = await McpHub.start(
      [
        {
          name: "slow",
          transport: "stdio",
          command: "/bin/sh",
          args: ["-c", script],
          env: {},
          disabled: false,
        },
      ],
      {
        callTimeoutMs: 10_000,
        connectTimeoutMs: 3_000,
        maxOutputChars: 10_000,
        blockedServers: [],
        maxRestarts: 5,
      },
    );
    const first = hub.status()[0];
    expect(first?.state).toBe("failed");
    expect(first?.error).toMatch(/did not finish starting within 3 s/);
    expect(first?.error).toMatch(/warming up the index/);

    const started = hub;
    await vi.waitFor(() => expect(started.status()[0]?.state).toBe("connected"), {
      timeout: 40_000,
      interval: 200,
    });
    expect(readFileSync(spawns, "utf8").trim().split("\n").length).toBeLessThanOrEqual(3);
    // Its prompts were listed too, within the same start-up.
    expect(started.prompts().length).toBeGreaterThan(0);
  }, 60_000);
});
