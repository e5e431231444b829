import { rmSync } from "node:fs";
import { join } from "node:path";
import { type App, startApp } from "../../src/app.js";
import type { DiscordEmulator } from "../emulators/discord/index.js";
import type { LlmEmulator } from "../emulators/llm/index.js";
import type { SlackEmulator } from "../emulators/slack/index.js";
import { everythingMcp, scratchConfig } from "./chat-process.js";

export interface AppEnvOptions {
  /** A folder from `scratchConfig`: its switchboard.yaml and mcp.json, and the SQLite store beside them. */
  dir: string;
  /** The model server: an emulator, or a base URL for a test that never reaches a model. */
  llm: LlmEmulator | string;
  /** Which API of the emulator the app speaks; OpenAI unless told. */
  protocol?: "openai" | "anthropic";
  /** The LLM key; a fixed test key unless the test looks for it in the output. */
  apiKey?: string;
  slack?: SlackEmulator;
  discord?: DiscordEmulator;
  /** STORE_URL; a SQLite file in `dir` unless told. */
  store?: string;
  /** More variables (OpenTelemetry's, say). */
  extra?: NodeJS.ProcessEnv;
}

/** The environment a user would give Switchboard, pointed at the emulators and the scratch folder. */
export function appEnv(opts: AppEnvOptions): NodeJS.ProcessEnv {
  const { dir, llm, slack, discord } = opts;
  const model =
    opts.protocol === "anthropic"
      ? {
          LLM_PROVIDER: "anthropic",
          ANTHROPIC_API_KEY: opts.apiKey ?? "sk-ant-test-emulator-key",
          ANTHROPIC_BASE_URL: typeof llm === "string" ? llm : llm.anthropicBaseUrl,
          LLM_MODEL: "claude-sonnet-4-5",
        }
      : {
          OPENAI_API_KEY: opts.apiKey ?? "sk-test-emulator-key",
          OPENAI_BASE_URL: typeof llm === "string" ? llm : llm.openaiBaseUrl,
          LLM_MODEL: "gpt-4o-mini",
        };
  return {
    ...(slack && {
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_APP_TOKEN: slack.appToken,
      SLACK_API_URL: slack.apiUrl,
    }),
    ...(discord && {
      DISCORD_TOKEN: discord.token,
      DISCORD_API_URL: discord.apiUrl,
      DISCORD_GUILD_ID: discord.guildId,
    }),
    ...model,
    SWITCHBOARD_CONFIG: join(dir, "switchboard.yaml"),
    MCP_CONFIG: join(dir, "mcp.json"),
    STORE_URL: opts.store ?? `sqlite://${join(dir, "store.sqlite")}`,
    ...opts.extra,
  };
}

export interface RunningApp {
  app: App;
  /** Stops the app and removes its scratch folder. */
  stop(): Promise<void>;
}

/** The real app in a scratch folder holding `yaml` and the "everything" MCP server, pointed at the emulators. */
export async function startWithEverything(
  yaml: string,
  opts: Omit<AppEnvOptions, "dir">,
): Promise<RunningApp> {
  const dir = scratchConfig(yaml, everythingMcp);
  const remove = () => rmSync(dir, { recursive: true, force: true });
  let app: App;
  try {
    app = await startApp({ env: appEnv({ ...opts, dir }), cwd: dir });
  } catch (err) {
    remove();
    throw err;
  }
  return {
    app,
    stop: async () => {
      await app.stop();
      remove();
    },
  };
}
