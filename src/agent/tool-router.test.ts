import { describe, expect, it } from "vitest";
import type { ToolEntry } from "../mcp/types.js";
import { parseRoute, routerPrompt } from "./tool-router.js";

const tool = (server: string, name: string, description = ""): ToolEntry => ({
  name: `${server}__${name}`,
  server,
  tool: name,
  description,
  inputSchema: { type: "object" },
});

describe("the tool router's answer", () => {
  const servers = ["github", "git", "web-search"];

  it("names the servers it mentions, whole names only", () => {
    expect(parseRoute("github", servers)).toEqual(new Set(["github"]));
    expect(parseRoute("Git, web-search.", servers)).toEqual(new Set(["git", "web-search"]));
    expect(parseRoute("<think>maybe git?</think>github", servers)).toEqual(new Set(["github"]));
    // A model whose template opened the tag writes only its end.
    expect(parseRoute("maybe git?</think>github", servers, "qwq-32b")).toEqual(new Set(["github"]));
  });

  it("NONE is no server; an answer naming nothing known is no answer", () => {
    expect(parseRoute("NONE", servers)).toEqual(new Set());
    expect(parseRoute("the calendar one", servers)).toBeUndefined();
    expect(parseRoute("", servers)).toBeUndefined();
  });

  it("shows each server's first tools and the latest message last", () => {
    const byServer = new Map([
      ["maps", [tool("maps", "get_route", "Directions between two places")]],
      ["crm", Array.from({ length: 10 }, (_, i) => tool("crm", `t${i}`))],
    ]);
    const prompt = routerPrompt(byServer, ["How far is Geneva?", "I am in Lyon"]);
    expect(prompt).toContain("- maps: get_route (Directions between two places)");
    expect(prompt).toContain("t7, and 2 more");
    expect(prompt.indexOf("> I am in Lyon")).toBeLessThan(
      prompt.indexOf("Latest message: How far is Geneva?"),
    );
  });
});
