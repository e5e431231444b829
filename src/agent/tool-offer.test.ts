import { describe, expect, it } from "vitest";
import type { ToolEntry, ToolHub } from "../mcp/types.js";
import { SEARCH_TOOL, ToolOffer, usedTools } from "./tool-offer.js";
import { queryOf, ToolIndex, terms } from "./tool-ranking.js";

function tool(server: string, name: string, description: string): ToolEntry {
  return {
    name: `${server}__${name}`,
    server,
    tool: name,
    description,
    inputSchema: { type: "object", properties: { id: { type: "string" } } },
  };
}

const CATALOG: ToolEntry[] = [
  ...["issue", "pull_request", "branch", "release"].flatMap((o) =>
    ["list", "get", "create"].map((v) =>
      tool("github", `${v}_${o}`, `${v} a ${o.replace("_", " ")} on GitHub`),
    ),
  ),
  ...["forecast", "alert", "station"].flatMap((o) =>
    ["list", "get"].map((v) => tool("weather", `${v}_${o}`, `${v} the weather ${o} for a city`)),
  ),
];
const size = () => 10;
const inner: ToolHub = {
  tools: () => CATALOG,
  status: () => [],
  close: async () => {},
  call: async (name) => ({ ok: true, text: `ran ${name}`, artifacts: [], ms: 0, server: "x", tool: name }),
};

function offer(texts: string[], used: string[] = [], maxTools = 6, maxTokens = 1_000): ToolOffer {
  return new ToolOffer(CATALOG, { maxTools, maxTokens }, { texts, used }, () => new ToolIndex(CATALOG), size);
}

const names = (o: ToolOffer) => o.tools().map((t) => t.name);

describe("tool ranking", () => {
  it("meets camelCase, snake_case and plurals at one stem", () => {
    expect(terms("listPullRequests")).toEqual(terms("list pull_request"));
  });

  it("ranks the tool whose name and description share the question's words first", () => {
    const ranked = new ToolIndex(CATALOG).rank(queryOf(["what is the weather forecast in Paris?"]));
    expect(ranked[0]?.tool.name).toMatch(/^weather__(get|list)_forecast$/);
    expect(ranked.every((r) => r.tool.server === "weather")).toBe(true);
  });

  it("finds nothing for words no tool has", () => {
    expect(new ToolIndex(CATALOG).rank(queryOf(["bonjour"]))).toEqual([]);
  });
});

describe("tool offer", () => {
  it("offers a catalog within the budget whole, without a search tool", () => {
    const whole = offer(["anything"], [], 100);
    expect(whole.limited).toBe(false);
    expect(names(whole)).toHaveLength(CATALOG.length);
  });

  it("above the budget offers the relevant tools and search_tools, never more than the budget", () => {
    const o = offer(["open a pull request on GitHub"]);
    expect(o.limited).toBe(true);
    expect(names(o)).toHaveLength(6);
    expect(names(o)).toContain("github__create_pull_request");
    expect(names(o).at(-1)).toBe(SEARCH_TOOL);
  });

  it("holds to the token budget as well as the count", () => {
    expect(names(offer(["github pull request"], [], 40, 35))).toHaveLength(3);
  });

  it("keeps the tools the thread used before the ranked ones", () => {
    const o = offer(["open a pull request"], ["weather__list_station"]);
    expect(names(o)[0]).toBe("weather__list_station");
  });

  it("a search makes the matches callable from the next step, dropping ranked tools for room", async () => {
    const o = offer(["open a pull request"], ["github__get_issue"]);
    expect(names(o)).not.toContain("weather__get_forecast");
    const hub = o.hub(inner);
    const found = await hub.call(SEARCH_TOOL, { query: "weather forecast" });
    expect(found.ok).toBe(true);
    expect(found.text).toContain("weather__get_forecast");
    expect(names(o)).toContain("weather__get_forecast");
    expect(names(o)).toContain("github__get_issue");
    expect(names(o)).toHaveLength(6);
    // Other calls still reach the servers.
    expect((await hub.call("github__get_issue", {})).text).toBe("ran github__get_issue");
  });

  it("answers an empty or hopeless search with a sentence that lists the servers", async () => {
    const hub = offer(["x"]).hub(inner);
    const empty = await hub.call(SEARCH_TOOL, {});
    expect(empty.ok).toBe(false);
    expect(empty.text).toContain("github (12), weather (6)");
    expect((await hub.call(SEARCH_TOOL, { query: "bonjour" })).text).toContain('No tool matches "bonjour"');
  });

  it("reads the thread's used tools, most recent first, without the search tool", () => {
    const call = (name: string) => ({ id: name, name, arguments: {} });
    expect(
      usedTools([
        { role: "assistant", content: "", toolCalls: [call("a__x"), call(SEARCH_TOOL)] },
        { role: "assistant", content: "", toolCalls: [call("b__y"), call("a__x")] },
      ]),
    ).toEqual(["b__y", "a__x"]);
  });
});
