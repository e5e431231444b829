import { spawn } from "node:child_process";
import { once } from "node:events";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describe, expect, it } from "vitest";
import { closeClient } from "./transport.js";

const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;

describe("closeClient", () => {
  it("kills a server process that outlives the client, and leaves no timer to hold up our exit", async () => {
    const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
    await once(child, "spawn");
    const before = timers();
    await closeClient(new Client({ name: "test", version: "1" }), child);
    expect(child.signalCode).toBe("SIGKILL");
    // No timer of ours is left; another test's timer may have ended meanwhile (the count is the process's).
    expect(timers()).toBeLessThanOrEqual(before);
  });
});
