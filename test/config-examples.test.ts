import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { configSchema, loadConfig } from "../src/config.js";
import { loadMcpConfig } from "../src/mcp/servers.js";
import { repoRoot } from "./support/chat-process.js";

const example = (name: string) => join(repoRoot, "config", name);

/** The object schema inside the defaults and prefaults that wrap a section, if it is one. */
function objectIn(schema: unknown): z.ZodObject | undefined {
  let s = schema as { _zod?: { def?: { innerType?: unknown; valueType?: unknown } } } | undefined;
  for (let i = 0; i < 5 && s; i++) {
    if (s instanceof z.ZodObject) return s;
    s = (s._zod?.def?.innerType ?? s._zod?.def?.valueType) as typeof s;
  }
  return undefined;
}

/** The lines under each top-level key of a YAML text, comments included. */
function sections(text: string): Map<string, string> {
  const out = new Map<string, string>();
  let current: string | undefined;
  for (const line of text.split("\n")) {
    const top = /^([A-Za-z]+):/.exec(line);
    if (top?.[1]) {
      current = top[1];
      out.set(current, "");
    } else if (current) {
      out.set(current, `${out.get(current)}${line}\n`);
    }
  }
  return out;
}

describe("config/switchboard.example.yaml", () => {
  const file = example("switchboard.example.yaml");

  it("loads as it is, and every value in it is the default", () => {
    const loaded = loadConfig({ SWITCHBOARD_CONFIG: file }, repoRoot);
    expect(loaded.file).toBe(file);
    expect(loaded.missingVars).toEqual([]);
    expect(loaded.config).toEqual(configSchema.parse({}));
  });

  it("lists every setting, set or commented out, under its section", () => {
    const bySection = sections(readFileSync(file, "utf8"));
    const unlisted: string[] = [];
    for (const [section, schema] of Object.entries(configSchema.shape)) {
      const body = bySection.get(section);
      if (body === undefined) {
        unlisted.push(section);
        continue;
      }
      for (const key of Object.keys(objectIn(schema)?.shape ?? {})) {
        if (!new RegExp(`^\\s+(# *)?${key}:`, "m").test(body)) unlisted.push(`${section}.${key}`);
      }
    }
    expect(unlisted).toEqual([]);
  });
});

describe("config/mcp.example.json", () => {
  it("reads as the two reference servers, run by node from the project's node_modules", () => {
    const servers = loadMcpConfig(example("mcp.example.json"), {});
    expect(servers).toEqual([
      {
        name: "everything",
        transport: "stdio",
        command: "node",
        args: ["node_modules/@modelcontextprotocol/server-everything/dist/index.js"],
        env: {},
        disabled: false,
      },
      {
        name: "files",
        transport: "stdio",
        command: "node",
        args: ["node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "."],
        env: {},
        disabledTools: ["write_file", "edit_file", "move_file"],
        disabled: false,
      },
    ]);
    for (const server of servers) {
      if (server.transport === "stdio") expect(existsSync(join(repoRoot, server.args[0] ?? ""))).toBe(true);
    }
  });
});

describe("config/slack-manifest.yaml", () => {
  const manifest = parseYaml(readFileSync(example("slack-manifest.yaml"), "utf8")) as {
    features: { slash_commands: { command: string }[] } & Record<string, unknown>;
    oauth_config: { scopes: { bot: string[] } };
    settings: { event_subscriptions: { bot_events: string[] }; socket_mode_enabled: boolean };
  };

  it("registers the slash command the config expects by default", () => {
    expect(manifest.features.slash_commands.map((c) => c.command)).toEqual([
      configSchema.parse({}).slack.slashCommand,
    ]);
  });

  it("subscribes to the events and asks for the scopes the Slack adapter uses, in Socket Mode", () => {
    expect(manifest.settings.socket_mode_enabled).toBe(true);
    expect(manifest.settings.event_subscriptions.bot_events).toEqual(
      expect.arrayContaining([
        "app_mention",
        "message.im",
        "message.channels",
        "assistant_thread_started",
        "agent_session_stopped",
        // An agent app's Messages tab opened: where its DM's suggested prompts are set.
        "app_home_opened",
      ]),
    );
    // Agent sessions are the default; the retiring Assistant view is not declared.
    expect(manifest.features).toHaveProperty("agent_view.agent_description");
    expect(manifest.features).not.toHaveProperty("assistant_view");
    expect(manifest.oauth_config.scopes.bot).toEqual(
      expect.arrayContaining([
        "app_mentions:read",
        "assistant:write",
        "chat:write",
        "commands",
        "files:read",
        "files:write",
        "reactions:write",
        "channels:history",
        "im:history",
      ]),
    );
  });
});
