/**
 * The optional tool router (agent.toolRouter) on the 200-tool catalog: a small model is
 * asked which servers a turn needs before the turn, and the turn is offered only theirs.
 * The question no tool's words match finds its tool without a search; small talk is
 * offered no tools; a router that fails leaves the turn with the usual offer.
 */
import { rmSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SEARCH_TOOL } from "../../src/agent/tool-offer.js";
import { type App, startApp } from "../../src/app.js";
import { catalogServers } from "../../src/mcp/testkit.js";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../emulators/llm/index.js";
import { SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { appEnv } from "../support/app-env.js";
import { CATALOG_ASKS, catalogModel, isRouterRequest, ranRightTool } from "../support/catalog-model.js";
import { scratchConfig } from "../support/chat-process.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";

const ROUTER = "small-router-model";

describe("a tool router before each turn", () => {
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let app: App;
  let dir: string;
  /** Set to make the router's requests fail. */
  let routerDown = false;

  const model = (req: RecordedRequest): ScriptedTurn => {
    if (isRouterRequest(req) && routerDown) return { error: { status: 500, message: "router down" } };
    if (!isTitleRequest(req) && !isRouterRequest(req) && /thanks/i.test(lastUserText(req)))
      return { text: `You are welcome (${req.toolNames.length} tools).` };
    return catalogModel(req);
  };
  const main = (text: string) =>
    llm.requests.filter((r) => !isTitleRequest(r) && !isRouterRequest(r) && lastUserText(r).includes(text));
  const ask = (channel: string, text: string, answer: RegExp) => {
    const m = slack.mention(channel, "U_ALICE", text);
    return waitFor(() => slack.botReplies(channel, m.ts).find((r) => answer.test(r.text)), {
      timeoutMs: 20_000,
    });
  };

  beforeAll(async () => {
    llm = await LlmEmulator.start({ responder: model });
    slack = await SlackEmulator.start();
    for (let i = 2; i <= 4; i++) slack.state.addChannel(`C${i}`, `room-${i}`);
    dir = scratchConfig(
      [
        "llm:",
        "  maxRetries: 0",
        "slack:",
        "  nativeStreaming: false",
        "agent:",
        "  toolRouter:",
        `    model: ${ROUTER}`,
        "approvals:",
        "  rules:",
        '    - server: "*"',
        "      mode: always",
      ].join("\n"),
    );
    writeFileSync(`${dir}/mcp.json`, JSON.stringify({ mcpServers: catalogServers(dir) }));
    app = await startApp({ env: appEnv({ llm, slack, dir }), cwd: dir });
  }, 90_000);

  afterAll(async () => {
    await app?.stop();
    await slack?.stop();
    await llm?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("offers only the server the router names: the right tool runs at once, without a search", async () => {
    const rain = CATALOG_ASKS[4];
    if (!rain) throw new Error("the rain question is missing");
    const reply = await ask("C1", rain.text, /^Done/);
    expect(ranRightTool(reply.text, rain)).toBe(true);
    const routed = llm.requests.filter((r) => isRouterRequest(r) && lastUserText(r).includes(rain.text));
    expect(routed).toHaveLength(1);
    expect(routed[0]?.model).toBe(ROUTER);
    // The router saw all ten servers, briefly.
    for (const server of ["weather", "github", "billing", "maps"])
      expect(lastUserText(routed[0]!)).toContain(`- ${server}: `);
    const asked = main(rain.text);
    expect(asked).toHaveLength(2);
    expect(asked[0]?.toolNames).toHaveLength(20);
    expect(asked[0]?.toolNames.every((n) => n.startsWith("weather__"))).toBe(true);
    expect(asked[0]?.toolNames).not.toContain(SEARCH_TOOL);
  });

  it("offers no tools to a message the router says needs none", async () => {
    const reply = await ask("C2", "thanks a lot!", /^You are welcome/);
    expect(reply.text).toBe("You are welcome (0 tools).");
    expect(main("thanks a lot!")[0]?.toolNames).toEqual([]);
  });

  it("a router that fails leaves the turn with the usual offer", async () => {
    routerDown = true;
    try {
      const route = CATALOG_ASKS[6];
      if (!route) throw new Error("the share link question is missing");
      const reply = await ask("C3", route.text, /^Done/);
      expect(ranRightTool(reply.text, route)).toBe(true);
      const first = main(route.text)[0];
      // The budgeted offer: ranked tools from several servers, and the search.
      expect(first?.toolNames).toContain(SEARCH_TOOL);
      expect(new Set(first?.toolNames.map((n) => n.split("__")[0])).size).toBeGreaterThan(1);
    } finally {
      routerDown = false;
    }
  });
});
