import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { scratchConfig } from "../support/chat-process.js";
import { killStarted, startSwitchboard } from "../support/process.js";

const dirs: string[] = [];

/** A scratch folder holding `yaml` as switchboard.yaml, and the environment that points at it. */
function configured(yaml: string, mcp?: unknown): { dir: string; env: NodeJS.ProcessEnv } {
  const dir = scratchConfig(yaml, mcp);
  dirs.push(dir);
  return {
    dir,
    env: {
      SWITCHBOARD_CONFIG: join(dir, "switchboard.yaml"),
      MCP_CONFIG: join(dir, "mcp.json"),
      STORE_URL: `sqlite://${join(dir, "store.sqlite")}`,
      // A platform and a model, so that only the configuration can stop `start`. Nothing is reached.
      DISCORD_TOKEN: "not.a.real.discord.token",
      DISCORD_API_URL: "http://127.0.0.1:9/api",
      OPENAI_API_KEY: "sk-test-bad-config",
      OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
    },
  };
}

async function run(command: "start" | "chat", env: NodeJS.ProcessEnv) {
  const bot = startSwitchboard(command, env);
  bot.child.stdin.end();
  const code = await bot.exited;
  return { code, stdout: bot.stdout(), stderr: bot.stderr() };
}

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
afterAll(killStarted);

describe("a bad configuration stops Switchboard with exit code 2 and says where", () => {
  it("names the file, the field and what is expected for a bad value (start)", async () => {
    const { dir, env } = configured("agent:\n  maxSteps: lots\n");
    const out = await run("start", env);
    expect(out.code).toBe(2);
    expect(out.stderr).toBe(
      `Configuration error: The config file ${join(dir, "switchboard.yaml")} has invalid settings:\n` +
        "  agent.maxSteps: Invalid input: expected number, received string\n",
    );
    expect(out.stdout).toBe("");
  });

  it("names the variable of a bad value set in the environment (chat)", async () => {
    const { dir, env } = configured("");
    const out = await run("chat", { ...env, LLM_PROVIDER: "openia" });
    expect(out.code).toBe(2);
    expect(out.stderr).toBe(
      `Configuration error: The config file ${join(dir, "switchboard.yaml")} and the environment have invalid settings:\n` +
        '  llm.provider (set by LLM_PROVIDER): Invalid option: expected one of "openai"|"anthropic"\n',
    );
  });

  it("says a STORE_URL it cannot parse is not a URL, with its password hidden (chat)", async () => {
    const { env } = configured("");
    // A "/" in the password ends the URL's authority early: the URL parser refuses it.
    const out = await run("chat", { ...env, STORE_URL: "redis://default:s3cr/etPW@redis:6379" });
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(
      /^Configuration error: STORE_URL is not a URL: redis:\/\/default:\*\*\*@redis:6379\./,
    );
    expect(out.stderr + out.stdout).not.toContain("etPW");
  });

  it("refuses a STORE_URL whose password the parser reads as a port, with its password hidden (chat)", async () => {
    const { env } = configured("");
    // Parsed, this is host 127.0.0.1, port 1, and "#s3cretPW@redis:6379" a fragment.
    const out = await run("chat", { ...env, STORE_URL: "redis://127.0.0.1:1#s3cretPW@redis:6379" });
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(
      /^Configuration error: STORE_URL is not a URL: redis:\/\/127\.0\.0\.1:\*\*\*@redis:6379\./,
    );
    expect(out.stderr + out.stdout).not.toMatch(/s3cretPW|127\.0\.0\.1:1\b/);
  });

  it("names LOG_LEVEL and the levels it takes when it is not one (chat)", async () => {
    const { env } = configured("");
    const out = await run("chat", { ...env, LOG_LEVEL: "verbose" });
    expect(out.code).toBe(2);
    expect(out.stderr).toBe(
      'Configuration error: LOG_LEVEL is "verbose", which is not a log level: set one of debug, info (the default), warn, error (or trace, fatal, silent), or leave it unset.\n',
    );
  });

  it("names the file of a YAML syntax error (chat)", async () => {
    const { dir, env } = configured("llm: [unclosed\n");
    const out = await run("chat", env);
    expect(out.code).toBe(2);
    const said = `Configuration error: The config file ${join(dir, "switchboard.yaml")} is not valid YAML: `;
    expect(out.stderr.slice(0, said.length)).toBe(said);
    // The YAML parser's own words follow; no stack trace.
    expect(out.stderr).not.toMatch(/^\s+at .*\(/m);
  });

  it("names the file, the server and the field of a bad MCP server (start)", async () => {
    const { dir, env } = configured("", { mcpServers: { github: { command: "" } } });
    const out = await run("start", env);
    expect(out.code).toBe(2);
    expect(out.stderr).toBe(
      `Configuration error: ${join(dir, "mcp.json")}: mcpServers.github.command must be a non-empty string\n`,
    );
  });

  it("says which variable points nowhere (start)", async () => {
    const { dir, env } = configured("");
    const missing = join(dir, "nope.yaml");
    const out = await run("start", { ...env, SWITCHBOARD_CONFIG: missing });
    expect(out.code).toBe(2);
    expect(out.stderr).toBe(
      `Configuration error: SWITCHBOARD_CONFIG points to ${missing}, which does not exist. Copy config/switchboard.example.yaml there or unset it.\n`,
    );
  });
});

describe("a configuration with unset variables", () => {
  it("warns at start naming the variables switchboard.yaml uses that are not set (chat)", async () => {
    const { dir, env } = configured(
      'agent:\n  systemPrompt: "You are the helpdesk bot of ${SB_UNSET_COMPANY}."\n',
    );
    const out = await run("chat", env);
    expect(out.code).toBe(0);
    const warning = out.stderr.split("\n").find((line) => line.includes("SB_UNSET_COMPANY"));
    expect(warning).toBeDefined();
    expect(JSON.parse(warning!)).toMatchObject({
      level: 40,
      file: join(dir, "switchboard.yaml"),
      variables: ["SB_UNSET_COMPANY"],
      msg: "the config file uses variables that are not set; they are left empty (npm run doctor names them)",
    });
  });
});

describe("a good configuration is not mistaken for a bad one", () => {
  it("takes an empty LOG_LEVEL as unset (chat)", async () => {
    const { env } = configured("");
    const out = await run("chat", { ...env, LOG_LEVEL: "" });
    expect(out.code).toBe(0);
    expect(out.stderr).not.toMatch(/^\s+at .*\(/m);
  });

  it("exits 1, not 2, when no platform is configured", async () => {
    const { dir } = configured("");
    const out = await run("start", {
      SWITCHBOARD_CONFIG: join(dir, "switchboard.yaml"),
      OPENAI_API_KEY: "sk-test-bad-config",
    });
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/^No chat platform is configured, so there is nothing to start\./);
  });
});
