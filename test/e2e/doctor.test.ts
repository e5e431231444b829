import { rmSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDoctor } from "../../src/doctor.js";
import { LlmEmulator } from "../emulators/llm/index.js";
import { SlackEmulator } from "../emulators/slack/index.js";
import { appEnv } from "../support/app-env.js";
import { everythingServer, scratchConfig } from "../support/chat-process.js";

async function doctor(env: NodeJS.ProcessEnv): Promise<{ ok: boolean; text: string }> {
  const out = new PassThrough();
  let text = "";
  out.on("data", (d: Buffer) => {
    text += d.toString();
  });
  const ok = await runDoctor(env, out);
  return { ok, text };
}

describe("npm run doctor", () => {
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let dir: string;
  let base: NodeJS.ProcessEnv;

  beforeAll(async () => {
    llm = await LlmEmulator.start();
    slack = await SlackEmulator.start();
    dir = scratchConfig("", {
      mcpServers: {
        everything: { command: process.execPath, args: [everythingServer] },
        broken: { command: "/nonexistent/mcp-server" },
      },
    });
    base = appEnv({ dir, llm, apiKey: "sk-test-doctor" });
  });

  afterAll(async () => {
    await llm?.close();
    await slack?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("checks config, store, LLM, each MCP server and Slack, with a reason for each failure", async () => {
    const { ok, text } = await doctor({
      ...base,
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_APP_TOKEN: slack.appToken,
      SLACK_API_URL: slack.apiUrl,
    });
    expect(ok).toBe(false);
    expect(text).toMatch(/^ok +config/m);
    expect(text).toMatch(/^ok +store +sqlite reachable; no bot running on it$/m);
    expect(text).toMatch(/^ok +llm \(openai, gpt-4o-mini\) +\d+ models; model listed/m);
    expect(text).toMatch(/^ok +mcp everything +\d+ tools/m);
    expect(text).toMatch(/^FAIL +mcp broken +failed: .*command not found/m);
    expect(text).toMatch(/^ok +slack +bot .*Socket Mode/m);
    expect(text).toContain("1 check(s) failed.");
  }, 60_000);

  it("reports a wrong token and an unreachable LLM in words", async () => {
    const { ok, text } = await doctor({
      ...base,
      MCP_CONFIG: undefined,
      OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
      SLACK_BOT_TOKEN: "xoxb-wrong",
      SLACK_API_URL: slack.apiUrl,
    });
    expect(ok).toBe(false);
    expect(text).toMatch(
      /^FAIL +llm \(openai, gpt-4o-mini\) +openai connection failed: Connection error\.$/m,
    );
    expect(text).toMatch(/^FAIL +slack +auth\.test answered invalid_auth/m);
    expect(text).not.toContain("xoxb-wrong");
  }, 60_000);

  it("stops at a bad config file and names it", async () => {
    const bad = scratchConfig("agent:\n  maxSteps: lots\n");
    const { ok, text } = await doctor({ ...base, SWITCHBOARD_CONFIG: join(bad, "switchboard.yaml") });
    expect(ok).toBe(false);
    expect(text).toMatch(/^FAIL +config .*switchboard\.yaml/m);
    expect(text).toContain("agent.maxSteps");
    rmSync(bad, { recursive: true, force: true });
  });
});
