import { describe, expect, it } from "vitest";
import { configSchema } from "../config.js";
import type { ServerStatus, ToolHub } from "../mcp/types.js";
import { type Command, type CommandDeps, runCommand } from "./commands.js";

/** A hub with one server up and two down; reconnecting brings a server up. */
function hub() {
  const servers: ServerStatus[] = [
    { name: "fs", state: "connected", transport: "stdio", toolCount: 14 },
    {
      name: "github",
      state: "failed",
      transport: "http",
      toolCount: 0,
      error: "could not reach https://example.test/mcp: ECONNREFUSED",
      retryInMs: 1_400,
    },
    {
      name: "memory",
      state: "reconnecting",
      transport: "stdio",
      toolCount: 9,
      error: "the server process exited; restarting in 2 s",
      retryInMs: 1_900,
    },
  ];
  const asked: string[] = [];
  const h: Pick<ToolHub, "status" | "reconnect"> = {
    status: () => servers,
    reconnect: async (name) => {
      asked.push(name);
      const s = servers.find((x) => x.name === name);
      if (!s) return undefined;
      Object.assign(s, { state: "connected", toolCount: 3 });
      delete s.error;
      delete s.retryInMs;
      return s;
    },
  };
  return { hub: h as ToolHub, asked };
}

const config = configSchema.parse({ access: { admins: ["U_ADMIN"] } });
const run = (deps: { hub: ToolHub }, user: string, arg?: string, platform: Command["platform"] = "slack") =>
  runCommand(
    { name: "reconnect", key: "slack:T1:C1:1.1", platform, user: { id: user }, ...(arg ? { arg } : {}) },
    { ...deps, config } as CommandDeps,
  );

describe("/switchboard reconnect", () => {
  it("is for admins only: anyone else is told so and nothing is tried", async () => {
    const h = hub();
    expect(await run(h, "U_SOMEONE")).toBe(
      "Only admins can reconnect tool servers. Ask one, or have your user id added to access.admins in the config.",
    );
    expect(h.asked).toEqual([]);
  });

  it("tries every server that is down, and says how each one is now", async () => {
    const h = hub();
    expect(await run(h, "U_ADMIN")).toBe(
      "• github (http): connected, 3 tools\n• memory (stdio): connected, 3 tools",
    );
    expect(h.asked).toEqual(["github", "memory"]);
    expect(await run(h, "U_ADMIN")).toBe("Every tool server is connected; there is nothing to reconnect.");
  });

  it("tries one server by name, and names an unknown one as such", async () => {
    const h = hub();
    expect(await run(h, "U_ADMIN", "github")).toBe("• github (http): connected, 3 tools");
    expect(await run(h, "U_ADMIN", "gitlab")).toBe(
      'There is no tool server named "gitlab". /tools lists them.',
    );
    expect(h.asked).toEqual(["github"]);
  });

  it("is always allowed in the terminal", async () => {
    const h = hub();
    await run(h, "local", "memory", "console");
    expect(h.asked).toEqual(["memory"]);
  });
});

describe("/tools", () => {
  it("shows why a server is down and when it is tried again, and who can try it at once", async () => {
    const { hub: h } = hub();
    const text = await runCommand(
      { name: "tools", key: "slack:T1:C1:1.1", platform: "slack", user: { id: "U" } },
      { hub: h, config } as CommandDeps,
    );
    expect(text).toBe(
      [
        "Tool servers:",
        "• fs (stdio): connected, 14 tools",
        "• github (http): failed (could not reach https://example.test/mcp: ECONNREFUSED; trying again in 2 s)",
        "• memory (stdio): reconnecting (the server process exited; restarting in 2 s)",
        "An admin can try a server again at once with the reconnect command.",
      ].join("\n"),
    );
  });
});
