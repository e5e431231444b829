/**
 * Ten MCP servers of twenty tools each (real SDK servers over stdio): each request carries
 * at most the tool budget (40 tools, and a share of the window in tokens), the tools most
 * relevant to the question among them, plus `search_tools`. A scripted model that calls the
 * right tool when it is offered, and searches for it when it is not, still gets to it.
 */
import { rmSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countTokens } from "../../src/agent/context.js";
import { SEARCH_TOOL } from "../../src/agent/tool-offer.js";
import { type App, startApp } from "../../src/app.js";
import { catalogServers } from "../../src/mcp/testkit.js";
import { LlmEmulator, type RecordedRequest } from "../emulators/llm/index.js";
import { SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { appEnv } from "../support/app-env.js";
import { CATALOG_ASKS, catalogModel, ranRightTool } from "../support/catalog-model.js";
import { scratchConfig } from "../support/chat-process.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";

/** gpt-4o-mini's window (128k) times the share configured below. */
const WINDOW_SHARE = 0.015;
const MAX_TOKENS = Math.floor(128_000 * WINDOW_SHARE);

/** Tokens of the tools as they went on the wire, counted as the app counts them. */
function wireToolTokens(req: RecordedRequest): number {
  const tools = Array.isArray(req.body.tools) ? req.body.tools : [];
  return tools.reduce((n: number, t: unknown) => n + countTokens(JSON.stringify(t)), 0);
}

describe("a catalog of 200 tools", () => {
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let app: App;
  let dir: string;

  beforeAll(async () => {
    llm = await LlmEmulator.start({ responder: catalogModel });
    slack = await SlackEmulator.start();
    for (let i = 2; i <= 12; i++) slack.state.addChannel(`C${i}`, `room-${i}`);
    dir = scratchConfig(
      [
        "llm:",
        "  maxRetries: 0",
        "slack:",
        "  nativeStreaming: false",
        "agent:",
        "  toolBudget:",
        "    maxTools: 40",
        `    windowShare: ${WINDOW_SHARE}`,
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

  it("connects all ten servers", () => {
    expect(app.hub.tools()).toHaveLength(200);
  });

  it.each(CATALOG_ASKS.map((a, i) => ({ ...a, channel: `C${i + 1}` })))(
    "$text: the right tool runs, and no request carries more than the budget",
    async ({ text, tool, channel }) => {
      const m = slack.mention(channel, "U_ALICE", text);
      const reply = await waitFor(
        () => slack.botReplies(channel, m.ts).find((r) => r.text.startsWith("Done")),
        {
          timeoutMs: 20_000,
        },
      );
      expect(ranRightTool(reply.text, { text, tool, search: "" })).toBe(true);
      const asked = llm.requests.filter((r) => !isTitleRequest(r) && lastUserText(r).includes(text));
      expect(asked.length).toBeGreaterThan(0);
      for (const req of asked) {
        expect(req.toolNames.length).toBeLessThanOrEqual(40);
        expect(req.toolNames).toContain(SEARCH_TOOL);
        expect(wireToolTokens(req)).toBeLessThanOrEqual(MAX_TOKENS);
      }
    },
    30_000,
  );

  it("finds a tool whose words the question does not use through a search, then keeps it for the thread", async () => {
    const rain = CATALOG_ASKS[4];
    if (!rain) throw new Error("the rain question is missing");
    const first = llm.requests.find((r) => lastUserText(r).includes(rain.text) && !isTitleRequest(r));
    // The first request did not have the tool: the model had to search.
    expect(first?.toolNames).not.toContain(rain.tool);
    expect(first?.toolNames).toHaveLength(1);

    const m = slack.mention("C12", "U_BOB", rain.text);
    await waitFor(() => slack.botReplies("C12", m.ts).find((r) => r.text.startsWith("Done")), {
      timeoutMs: 20_000,
    });
    // A follow-up in that thread is offered the tool it used, with no search.
    slack.post("C12", "U_BOB", `${rain.text} And on Sunday?`, { threadTs: m.ts });
    await waitFor(
      () =>
        llm.requests.find(
          (r) => lastUserText(r).includes("And on Sunday?") && r.toolNames.includes(rain.tool),
        ),
      { timeoutMs: 20_000 },
    );
  });
});
