import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "./config.js";
import { SwitchboardError } from "./core/errors.js";
import { interpolate } from "./interpolate.js";

function dirWith(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "sb-config-"));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

function configError(fn: () => unknown): SwitchboardError {
  try {
    fn();
  } catch (err) {
    if (err instanceof SwitchboardError) return err;
    throw err;
  }
  throw new Error("expected a configuration error");
}

describe("configuration", () => {
  it("runs on defaults when there is no file", () => {
    const loaded = loadConfig({}, dirWith({}));
    expect(loaded.file).toBeUndefined();
    expect(loaded.config.agent.maxSteps).toBe(10);
    expect(loaded.config.llm.provider).toBe("openai");
    expect(loaded.storeUrl).toBe("sqlite://data/switchboard.sqlite");
  });

  it("lets an unanswered approval wait ten minutes by default", () => {
    expect(loadConfig({}, dirWith({})).config.approvals.expireAfterMs).toBe(600_000);
  });

  it("reads the file named by SWITCHBOARD_CONFIG and fills ${VAR}s", () => {
    const dir = dirWith({ "my.yaml": "llm:\n  model: ${MODEL:-fallback}\nagent:\n  maxSteps: 4\n" });
    const loaded = loadConfig({ SWITCHBOARD_CONFIG: "my.yaml", MODEL: "gpt-4.1" }, dir);
    expect(loaded.config.llm.model).toBe("gpt-4.1");
    expect(loaded.config.agent.maxSteps).toBe(4);
    expect(loadConfig({ SWITCHBOARD_CONFIG: "my.yaml" }, dir).config.llm.model).toBe("fallback");
  });

  it("reads a value that is one ${VAR} and nothing else as YAML would read it written there", () => {
    const dir = dirWith({
      "switchboard.yaml": [
        "health:",
        "  port: ${HEALTH_PORT:-9464}",
        "  enabled: ${HEALTH_ON:-true}",
        "llm:",
        // Quoted, or with more around it, it stays text.
        '  model: "${MODEL}"',
        "  temperature: ${TEMPERATURE}",
        "agent:",
        "  maxSteps: ${STEPS}",
        "  systemPrompt: ${PROMPT}",
        "",
      ].join("\n"),
    });
    const env = {
      SWITCHBOARD_CONFIG: "switchboard.yaml",
      MODEL: "4",
      TEMPERATURE: "0.5",
      STEPS: "0x10",
      PROMPT: "# A heading: not a comment",
    };
    const { config } = loadConfig(env, dir);
    expect(config.health).toMatchObject({ port: 9464, enabled: true });
    expect(config.llm.model).toBe("4");
    expect(config.llm.temperature).toBe(0.5);
    expect(config.agent.maxSteps).toBe(16);
    expect(config.agent.systemPrompt).toBe("# A heading: not a comment");
    const set = loadConfig({ ...env, HEALTH_PORT: "18010", HEALTH_ON: "false" }, dir).config.health;
    expect(set).toMatchObject({ port: 18010, enabled: false });
  });

  it("refuses an empty health.host, naming the unset variable that left it empty", () => {
    const dir = dirWith({
      "switchboard.yaml": "health:\n  host: ${HEALTH_HOST}\n",
      "empty.yaml": 'health:\n  host: ""\n',
    });
    const unset = configError(() => loadConfig({ SWITCHBOARD_CONFIG: "switchboard.yaml" }, dir));
    expect(unset.message).toBe(
      `The config file ${join(dir, "switchboard.yaml")} has invalid settings:\n` +
        "  health.host (set by ${HEALTH_HOST}, which is not set): must not be empty, which would listen on every interface: set an address (127.0.0.1, or 0.0.0.0 for all of them)",
    );
    const empty = configError(() => loadConfig({ SWITCHBOARD_CONFIG: "empty.yaml" }, dir));
    expect(empty.message).toMatch(/^ {2}health\.host: must not be empty/m);
    expect(
      loadConfig({ SWITCHBOARD_CONFIG: "switchboard.yaml", HEALTH_HOST: "0.0.0.0" }, dir).config.health.host,
    ).toBe("0.0.0.0");
  });

  it("names each unset variable once", () => {
    const dir = dirWith({
      "switchboard.yaml":
        'agent:\n  systemPrompt: "Helpdesk of ${COMPANY} (${COMPANY})"\nmodels:\n  title: ${TITLE_MODEL:-gpt-4o-mini}\n',
    });
    const loaded = loadConfig({ SWITCHBOARD_CONFIG: "switchboard.yaml" }, dir);
    expect(loaded.missingVars).toEqual(["COMPANY"]);
    expect(loaded.config.agent.systemPrompt).toBe("Helpdesk of  ()");
  });

  it("takes LOG_LEVEL in any case, an empty one as unset, and refuses one that is not a level", () => {
    const dir = dirWith({});
    expect(() => loadConfig({ LOG_LEVEL: "" }, dir)).not.toThrow();
    expect(() => loadConfig({ LOG_LEVEL: "DEBUG" }, dir)).not.toThrow();
    const refused = configError(() => loadConfig({ LOG_LEVEL: "verbose" }, dir));
    expect(refused.code).toBe("config_invalid");
    expect(refused.message).toMatch(
      /^LOG_LEVEL is "verbose", which is not a log level: set one of debug, info/,
    );
  });

  it("lets LLM_PROVIDER and LLM_MODEL override the file", () => {
    const dir = dirWith({ "switchboard.yaml": "" });
    const loaded = loadConfig({ LLM_PROVIDER: "anthropic", LLM_MODEL: "claude-sonnet-4-5" }, dir);
    expect(loaded.config.llm).toMatchObject({ provider: "anthropic", model: "claude-sonnet-4-5" });
  });

  it("names the variable of a bad value the environment sets, and only then the environment", () => {
    const alone = configError(() => loadConfig({ PORT: "eighty" }, dirWith({})));
    expect(alone.message).toBe(
      "The environment has invalid settings:\n  slack.port (set by PORT): Invalid input: expected number, received NaN",
    );
    const dir = dirWith({ "switchboard.yaml": "agent:\n  maxSteps: many\n" });
    const fileOnly = configError(() =>
      loadConfig({ SWITCHBOARD_CONFIG: "switchboard.yaml", LLM_MODEL: "gpt-4o" }, dir),
    );
    expect(fileOnly.message.split("\n")[0]).toBe(
      `The config file ${join(dir, "switchboard.yaml")} has invalid settings:`,
    );
  });

  it("names the file, the field and what is expected for a bad value", () => {
    const dir = dirWith({ "bad.yaml": "agent:\n  maxSteps: many\nllm:\n  provider: gemini\n" });
    const err = configError(() => loadConfig({ SWITCHBOARD_CONFIG: "bad.yaml" }, dir));
    expect(err.code).toBe("config_invalid");
    expect(err.message).toContain(join(dir, "bad.yaml"));
    expect(err.message).toMatch(/agent\.maxSteps: .*number/);
    expect(err.message).toMatch(/llm\.provider: .*"openai"/);
  });

  it("takes a Discord shard of a count, and says why a shard outside its count is refused", () => {
    const ok = dirWith({ "s.yaml": "discord:\n  shard:\n    id: 1\n    count: 2\n" });
    expect(loadConfig({ SWITCHBOARD_CONFIG: "s.yaml" }, ok).config.discord.shard).toEqual({
      id: 1,
      count: 2,
    });
    const bad = dirWith({ "s.yaml": "discord:\n  shard:\n    id: 2\n    count: 2\n" });
    expect(configError(() => loadConfig({ SWITCHBOARD_CONFIG: "s.yaml" }, bad)).message).toMatch(
      /discord\.shard: shard\.id must be below shard\.count/,
    );
  });

  it("takes a model's tokenizerMargin as a fraction, and says so of a percentage or a negative one", () => {
    const ok = dirWith({ "m.yaml": 'modelSettings:\n  "llama3.1:8b":\n    tokenizerMargin: 0.2\n' });
    expect(
      loadConfig({ SWITCHBOARD_CONFIG: "m.yaml" }, ok).config.modelSettings["llama3.1:8b"]?.tokenizerMargin,
    ).toBe(0.2);
    const percent = dirWith({ "m.yaml": 'modelSettings:\n  "llama3.1:8b":\n    tokenizerMargin: 25\n' });
    expect(configError(() => loadConfig({ SWITCHBOARD_CONFIG: "m.yaml" }, percent)).message).toMatch(
      /modelSettings\.llama3\.1:8b\.tokenizerMargin: must be at most 2: a fraction .*not 35/,
    );
    const negative = dirWith({ "m.yaml": 'modelSettings:\n  "llama3.1:8b":\n    tokenizerMargin: -0.1\n' });
    expect(configError(() => loadConfig({ SWITCHBOARD_CONFIG: "m.yaml" }, negative)).message).toMatch(
      /modelSettings\.llama3\.1:8b\.tokenizerMargin: must be 0 or more/,
    );
  });

  it("rejects unknown keys, which are usually typos", () => {
    const dir = dirWith({ "typo.yaml": "agent:\n  maxStep: 3\n" });
    expect(configError(() => loadConfig({ SWITCHBOARD_CONFIG: "typo.yaml" }, dir)).message).toContain(
      "maxStep",
    );
  });

  it("takes a section whose entries are all commented out for its defaults", () => {
    const dir = dirWith({ "empty.yaml": "modelSettings:\n  # llama3.1:8b:\n  #   vision: false\nagent:\n" });
    const loaded = loadConfig({ SWITCHBOARD_CONFIG: "empty.yaml" }, dir);
    expect(loaded.config.modelSettings).toEqual({});
    expect(loaded.config.agent.maxSteps).toBe(10);
  });

  it("reports YAML syntax errors with the file name", () => {
    const dir = dirWith({ "broken.yaml": "llm: [unclosed\n" });
    expect(configError(() => loadConfig({ SWITCHBOARD_CONFIG: "broken.yaml" }, dir)).message).toMatch(
      /broken\.yaml is not valid YAML/,
    );
  });

  it("says so when SWITCHBOARD_CONFIG or MCP_CONFIG points nowhere", () => {
    const dir = dirWith({});
    expect(configError(() => loadConfig({ SWITCHBOARD_CONFIG: "nope.yaml" }, dir)).message).toContain(
      "does not exist",
    );
    expect(configError(() => loadConfig({ MCP_CONFIG: "nope.json" }, dir)).message).toContain("MCP_CONFIG");
  });

  it("interpolates nested values and records unset variables", () => {
    const missing: string[] = [];
    const out = interpolate({ a: ["${X}", { b: "pre-${Y}-post" }] }, { X: "1" }, missing);
    expect(out).toEqual({ a: ["1", { b: "pre--post" }] });
    expect(missing).toEqual(["Y"]);
  });
});
