import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describe, expect, it } from "vitest";
import type { StdioServerConfig } from "./servers.js";
import { childOf, closeClient, createTransport, inOwnSession } from "./transport.js";

const everything = join(
  import.meta.dirname,
  "../../node_modules/@modelcontextprotocol/server-everything/dist/index.js",
);
const stdioConfig: StdioServerConfig = {
  name: "everything",
  transport: "stdio",
  command: "",
  args: [],
  env: {},
  disabled: false,
};

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

/** A process's group id, from /proc (Linux, where servers get a session of their own). */
const groupOf = (pid: number) =>
  Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ")[2]);

describe.runIf(process.platform === "linux")("a stdio server's process group", () => {
  it("is its own, so a Ctrl+C to the terminal's group does not reach it; the pid is the server's", async () => {
    const transport = createTransport(
      { ...stdioConfig, command: process.execPath, args: [everything] },
      () => {},
    );
    const client = new Client({ name: "test", version: "1" });
    await client.connect(transport);
    const child = childOf(transport)!;
    try {
      expect(groupOf(child.pid!)).toBe(child.pid);
      expect(groupOf(child.pid!)).not.toBe(groupOf(process.pid));
      // setsid ran the server in place: the process the SDK will signal is the server.
      expect(readFileSync(`/proc/${child.pid}/cmdline`, "utf8")).toContain("server-everything");
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    } finally {
      await closeClient(client, child);
    }
  });

  it("keeps 'command not found' for a command that is not there", () => {
    expect(inOwnSession({ command: "no-such-server-command", args: ["x"], env: {} })).toEqual({
      command: "no-such-server-command",
      args: ["x"],
    });
    expect(inOwnSession({ command: "./missing.js", args: [], env: {}, cwd: "/" })).toEqual({
      command: "./missing.js",
      args: [],
    });
  });

  it("finds a bare command on the server's own PATH", () => {
    const { command, args } = inOwnSession({
      command: "node",
      args: ["a"],
      env: { PATH: dirname(process.execPath) },
    });
    expect(command).toMatch(/setsid$/);
    expect(args).toEqual([join(dirname(process.execPath), "node"), "a"]);
  });
});
