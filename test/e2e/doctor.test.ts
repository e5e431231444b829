import { rmSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDoctor } from "../../src/doctor.js";
import { LlmEmulator } from "../emulators/llm/index.js";
import { SlackEmulator } from "../emulators/slack/index.js";
import { appEnv } from "../support/app-env.js";
import { everythingServer, scratchConfig } from "../support/chat-process.js";
import { closedPort } from "../support/ports.js";

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
    const closed = await closedPort();
    const { ok, text } = await doctor({
      ...base,
      MCP_CONFIG: undefined,
      OPENAI_BASE_URL: `http://127.0.0.1:${closed}/v1`,
      SLACK_BOT_TOKEN: "xoxb-wrong",
      SLACK_API_URL: slack.apiUrl,
    });
    expect(ok).toBe(false);
    expect(text).toMatch(
      /^FAIL +llm \(openai, gpt-4o-mini\) +could not reach http:\/\/127\.0\.0\.1:\d+\/v1: connection refused \(nothing listens there\)$/m,
    );
    expect(text).toMatch(/^FAIL +slack +http:\/\/127\.0\.0\.1:\d+\/api\/auth\.test answered invalid_auth/m);
    expect(text).not.toContain("xoxb-wrong");
  }, 60_000);

  it("fails Slack as npm start would: an app token Slack refuses, or no way to receive events", async () => {
    const slackEnv = {
      ...base,
      MCP_CONFIG: undefined,
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_API_URL: slack.apiUrl,
    };
    const refused = await doctor({ ...slackEnv, SLACK_APP_TOKEN: "xapp-wrong" });
    expect(refused.ok).toBe(false);
    expect(refused.text).toMatch(
      /^FAIL +slack +bot .*, but Slack refused SLACK_APP_TOKEN \(invalid_auth\) at apps\.connections\.open: check the app-level token \(xapp-…, with the connections:write scope\)$/m,
    );
    expect(refused.text).not.toContain("xapp-wrong");

    const neither = await doctor(slackEnv);
    expect(neither.ok).toBe(false);
    expect(neither.text).toMatch(
      /^FAIL +slack +bot .*, but neither SLACK_APP_TOKEN \(Socket Mode\) nor SLACK_SIGNING_SECRET \(HTTP events\) is set, so npm start would not start Slack: set one of them$/m,
    );

    const noBot = await doctor({ ...base, MCP_CONFIG: undefined, SLACK_APP_TOKEN: slack.appToken });
    expect(noBot.ok).toBe(false);
    expect(noBot.text).toMatch(
      /^FAIL +slack +SLACK_APP_TOKEN is set but SLACK_BOT_TOKEN is not, so npm start would not start Slack; set SLACK_BOT_TOKEN \(xoxb-…\)$/m,
    );

    const http = await doctor({ ...slackEnv, SLACK_SIGNING_SECRET: "signing-secret-doctor" });
    expect(http.text).toMatch(/^ok +slack +bot .*; HTTP events$/m);
  }, 60_000);

  it("names the address and the cause of each endpoint it cannot use, and never a URL's password", async () => {
    const closed = await closedPort();
    const crashing = scratchConfig("", {
      mcpServers: {
        github: {
          type: "http",
          url: `http://127.0.0.1:${closed}/mcp`,
          headers: { Authorization: "Bearer ${SB_DOCTOR_UNSET_TOKEN}" },
        },
        crashing: {
          command: process.execPath,
          args: ["-e", "throw new Error('cannot open database /nope/db.sqlite')"],
        },
      },
    });
    const { ok, text } = await doctor({
      ...base,
      MCP_CONFIG: join(crashing, "mcp.json"),
      OPENAI_BASE_URL: `http://llm:llm-pass-4711@127.0.0.1:${closed}/v1`,
      SLACK_BOT_TOKEN: "xoxb-doctor",
      SLACK_APP_TOKEN: "xapp-doctor",
      SLACK_API_URL: `http://127.0.0.1:${closed}/api/`,
      DISCORD_TOKEN: "discord-doctor",
      DISCORD_API_URL: `http://127.0.0.1:${closed}/api`,
    });
    expect(ok).toBe(false);
    expect(text).toMatch(
      /^FAIL +llm .* http:\/\/127\.0\.0\.1:\d+\/v1 is given with a user name or password in the URL, which HTTP requests cannot carry; put the key in OPENAI_API_KEY instead$/m,
    );
    expect(text).toMatch(
      /^FAIL +slack +could not reach http:\/\/127\.0\.0\.1:\d+\/api\/: connection refused/m,
    );
    expect(text).toMatch(
      /^FAIL +discord +could not reach http:\/\/127\.0\.0\.1:\d+\/api: connection refused/m,
    );
    expect(text).toMatch(/^FAIL +mcp variables +.*mcp\.json uses \$\{SB_DOCTOR_UNSET_TOKEN\}, not set/m);
    expect(text).toMatch(
      /^FAIL +mcp github +failed: could not reach http:\/\/127\.0\.0\.1:\d+\/mcp: connection refused \(nothing listens there\)/m,
    );
    // A dying server's own error line, not Node's version footer.
    expect(text).toMatch(/^FAIL +mcp crashing +failed: .*cannot open database \/nope\/db\.sqlite/m);
    expect(text).not.toMatch(/Node\.js v\d/);
    expect(text).not.toContain("pass-4711");
    rmSync(crashing, { recursive: true, force: true });
  }, 60_000);

  it("never shows a password the URL parser cannot read (a / in it)", async () => {
    const { ok, text } = await doctor({
      ...base,
      MCP_CONFIG: undefined,
      STORE_URL: "redis://default:s3cr/etPW@redis:6379",
      OPENAI_BASE_URL: "http://llm:s3cr/etLLM@127.0.0.1:9/v1",
      SLACK_BOT_TOKEN: "xoxb-doctor",
      SLACK_APP_TOKEN: "xapp-doctor",
      SLACK_API_URL: "http://slack:s3cr/etSLACK@127.0.0.1:9/api/",
      DISCORD_TOKEN: "discord-doctor",
      DISCORD_API_URL: "http://discord:s3cr/etDISCORD@127.0.0.1:9/api",
    });
    expect(ok).toBe(false);
    expect(text).toMatch(/^FAIL +store +STORE_URL is not a URL: redis:\/\/default:\*\*\*@redis:6379\./m);
    expect(text).toMatch(
      /^FAIL +llm .* OPENAI_BASE_URL is not a URL: http:\/\/llm:\*\*\*@127\.0\.0\.1:9\/v1\./m,
    );
    expect(text).toMatch(
      /^FAIL +slack +SLACK_API_URL is not a URL: http:\/\/slack:\*\*\*@127\.0\.0\.1:9\/api\/\./m,
    );
    expect(text).toMatch(
      /^FAIL +discord +DISCORD_API_URL is not a URL: http:\/\/discord:\*\*\*@127\.0\.0\.1:9\/api\./m,
    );
    expect(text).not.toMatch(/etPW|etLLM|etSLACK|etDISCORD/);
  }, 60_000);

  it("never shows a password the URL parser reads as a port and a fragment, query or path (a #, ? or / in it)", async () => {
    const { ok, text } = await doctor({
      ...base,
      MCP_CONFIG: undefined,
      STORE_URL: "redis://127.0.0.1:1#s3cretPW@redis:6379",
      OPENAI_BASE_URL: "http://llm:9?s3cretLLM@127.0.0.1:9/v1",
      SLACK_BOT_TOKEN: "xoxb-doctor",
      SLACK_APP_TOKEN: "xapp-doctor",
      SLACK_API_URL: "http://slack:9/s3cretSLACK@127.0.0.1:9/api/",
      DISCORD_TOKEN: "discord-doctor",
      DISCORD_API_URL: "http://discord:9#s3cretDISCORD@127.0.0.1:9/api",
    });
    expect(ok).toBe(false);
    expect(text).toMatch(/^FAIL +store +STORE_URL is not a URL: redis:\/\/127\.0\.0\.1:\*\*\*@redis:6379\./m);
    expect(text).toMatch(
      /^FAIL +llm .* OPENAI_BASE_URL is not a URL: http:\/\/llm:\*\*\*@127\.0\.0\.1:9\/v1\./m,
    );
    expect(text).toMatch(
      /^FAIL +slack +SLACK_API_URL is not a URL: http:\/\/slack:\*\*\*@127\.0\.0\.1:9\/api\/\./m,
    );
    expect(text).toMatch(
      /^FAIL +discord +DISCORD_API_URL is not a URL: http:\/\/discord:\*\*\*@127\.0\.0\.1:9\/api\./m,
    );
    expect(text).not.toMatch(/s3cret|127\.0\.0\.1:1\b|(llm|slack|discord):9\b/);
  }, 60_000);

  it("fails the config line for a ${VAR} in switchboard.yaml that is not set", async () => {
    const dir = scratchConfig(
      'agent:\n  systemPrompt: "You are the helpdesk bot of ${SB_DOCTOR_COMPANY}."\n',
    );
    const { ok, text } = await doctor({
      ...base,
      MCP_CONFIG: undefined,
      SWITCHBOARD_CONFIG: join(dir, "switchboard.yaml"),
    });
    expect(ok).toBe(false);
    expect(text).toMatch(
      /^FAIL +config +.*switchboard\.yaml uses \$\{SB_DOCTOR_COMPANY\}, not set in the environment \(left empty\): set it, or give a default as \$\{VAR:-default\}$/m,
    );
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it("fails an MCP server whose tool filters name no tool, or whose keys look misspelt", async () => {
    const dir = scratchConfig("", {
      mcpServers: {
        everything: {
          command: process.execPath,
          args: [everythingServer],
          disabledTools: ["everything__echo"],
          enabledtools: ["echo"],
        },
      },
    });
    const { ok, text } = await doctor({ ...base, MCP_CONFIG: join(dir, "mcp.json") });
    expect(ok).toBe(false);
    expect(text).toMatch(
      /^FAIL +mcp everything +\d+ tools, but: mcpServers\.everything\.enabledtools is not a setting Switchboard reads, so it is ignored: did you mean "enabledTools"\? disabledTools names "everything__echo", which is not a tool of this server, so it disables nothing: .*\("echo"\)\.$/m,
    );
    rmSync(dir, { recursive: true, force: true });
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
