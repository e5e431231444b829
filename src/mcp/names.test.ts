import { describe, expect, it } from "vitest";
import { baseToolName, TOOL_NAME_PATTERN, ToolNameMap } from "./names.js";

describe("provider-safe tool names", () => {
  it("joins server and tool with a double underscore when both are already safe", () => {
    const names = new ToolNameMap([{ server: "github", tool: "search_issues" }]);
    expect(names.names()).toEqual(["github__search_issues"]);
    expect(names.resolve("github__search_issues")).toEqual({ server: "github", tool: "search_issues" });
  });

  it("replaces characters providers refuse and still maps back to the exact MCP name", () => {
    const names = new ToolNameMap([{ server: "my server", tool: "files/read.v2" }]);
    const name = names.nameOf("my server", "files/read.v2");
    expect(name).toBe("my_server__files_read_v2");
    expect(names.resolve(name ?? "")).toEqual({ server: "my server", tool: "files/read.v2" });
  });

  it("caps long names at 64 characters with a stable hash, different for different tools", () => {
    const a = { server: "server", tool: `${"x".repeat(80)}a` };
    const b = { server: "server", tool: `${"x".repeat(80)}b` };
    const names = new ToolNameMap([a, b]);
    const nameA = names.nameOf(a.server, a.tool) ?? "";
    const nameB = names.nameOf(b.server, b.tool) ?? "";
    expect(nameA).toMatch(TOOL_NAME_PATTERN);
    expect(nameA).toHaveLength(64);
    expect(nameA).not.toBe(nameB);
    expect(baseToolName(a)).toBe(nameA);
    expect(names.resolve(nameB)).toEqual(b);
  });

  it("resolves collisions deterministically whatever the input order, the unrewritten name keeping its own", () => {
    const refs = [
      { server: "s", tool: "a.b" },
      { server: "s", tool: "a_b" },
      { server: "s", tool: "a-b" },
      { server: "s", tool: "a b" },
    ];
    const one = new ToolNameMap(refs);
    const two = new ToolNameMap([...refs].reverse());
    expect(one.nameOf("s", "a_b")).toBe("s__a_b");
    for (const ref of refs) expect(two.nameOf(ref.server, ref.tool)).toBe(one.nameOf(ref.server, ref.tool));
    expect(new Set(one.names()).size).toBe(4);
    for (const name of one.names()) {
      expect(name).toMatch(TOOL_NAME_PATTERN);
      const ref = one.resolve(name);
      expect(ref && one.nameOf(ref.server, ref.tool)).toBe(name);
    }
  });

  it("never hands out a suffixed name that another tool owns as its own", () => {
    const names = new ToolNameMap([
      { server: "s", tool: "t.x" },
      { server: "s", tool: "t_x" },
      { server: "s", tool: "t_x_2" },
    ]);
    expect(names.nameOf("s", "t_x_2")).toBe("s__t_x_2");
    expect(names.nameOf("s", "t.x")).toBe("s__t_x_3");
  });

  it("keeps suffixed names within 64 characters when long names collide", () => {
    const long = "y".repeat(70);
    const names = new ToolNameMap([
      { server: "s", tool: `${long}.q` },
      { server: "s", tool: `${long}_q` },
    ]);
    expect(names.names()).toHaveLength(2);
    for (const name of names.names()) expect(name).toMatch(TOOL_NAME_PATTERN);
  });

  it("answers undefined for a name it never gave out", () => {
    expect(new ToolNameMap([]).resolve("nope__tool")).toBeUndefined();
  });
});
