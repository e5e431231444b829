import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { z } from "zod";
import { applyEnvOverrides, envSources, nonEmpty, readSecrets, type Secrets } from "./config-env.js";
import { SwitchboardError } from "./core/errors.js";
import { interpolateYaml, type UnsetVariable, unsetSources } from "./interpolate.js";
import { logLevelProblem } from "./log.js";
import { mcpSettingsSchema } from "./mcp/settings.js";

const modelSettings = z
  .object({
    contextWindow: z.number().int().positive().optional(),
    maxOutputTokens: z.number().int().positive().optional(),
    /**
     * How many more tokens than o200k the model's tokenizer counts, as a fraction (0.35: 35 %
     * more; 0: it is o200k). Default: none for OpenAI's models, 0.35 for the rest (answer-room.ts).
     */
    tokenizerMargin: z
      .number()
      .min(
        0,
        "must be 0 or more: how many more tokens than o200k the model counts, as a fraction (0.35 for 35 %)",
      )
      .max(2, "must be at most 2: a fraction of o200k's count (0.35 for 35 % more, not 35)")
      .optional(),
    /** `text` for models without native tool calling: manifest in the prompt, `<tool_call>` parsed. */
    toolProtocol: z.enum(["native", "text"]).default("native"),
    vision: z.boolean().optional(),
  })
  .strict();

const channelPrompt = z
  .object({
    platform: z.enum(["slack", "discord", "console"]),
    channel: z.string().min(1),
    prompt: z.string().min(1),
  })
  .strict();

const platformName = z.enum(["slack", "discord", "console"]);

/** One override of the default approval policy; the most specific matching rule wins. */
/** A daily cap: input and output tokens together, or US dollars (of models with a price), or both. */
const budgetCap = z
  .object({ tokens: z.number().int().positive().optional(), cost: z.number().positive().optional() })
  .strict()
  .refine((b) => b.tokens !== undefined || b.cost !== undefined, {
    message: "a budget needs tokens, cost or both",
  });

const approvalRule = z
  .object({
    /** An MCP server's name as in mcp.json, or "*" for every server. */
    server: z.string().min(1),
    /** One of its tools, by its MCP name; all of them when absent. */
    tool: z.string().min(1).optional(),
    platform: platformName.optional(),
    /** A Slack or Discord channel id (the parent channel for threads). */
    channel: z.string().min(1).optional(),
    mode: z.enum(["always", "ask", "never"]),
  })
  .strict();

/** Who may decide approvals besides the person who asked, everywhere or in one place. */
const approverGroup = z
  .object({
    platform: z.enum(["slack", "discord"]).optional(),
    channel: z.string().min(1).optional(),
    users: z.array(z.string().min(1)).default([]),
    /** Slack user group ids (S…): their members may decide. */
    slackUserGroups: z.array(z.string().min(1)).default([]),
    /** Discord role ids: members with one of them may decide. */
    discordRoles: z.array(z.string().min(1)).default([]),
  })
  .strict();

export const configSchema = z
  .object({
    llm: z
      .object({
        provider: z.enum(["openai", "anthropic"]).default("openai"),
        model: z.string().min(1).default("gpt-4o-mini"),
        maxRetries: z.number().int().min(0).max(10).default(3),
        requestTimeoutMs: z.number().int().positive().default(120_000),
        temperature: z.number().min(0).max(2).optional(),
      })
      .strict()
      .prefault({}),
    models: z
      .object({
        /** Model for rolling summaries; may be cheaper. Default: the chat model. */
        summary: z.string().min(1).optional(),
        /** Model for thread titles. Default: the chat model. */
        title: z.string().min(1).optional(),
        /** Models users may switch a thread to with `/model`. */
        allowed: z.array(z.string().min(1)).default([]),
      })
      .strict()
      .prefault({}),
    modelSettings: z.record(z.string(), modelSettings).default({}),
    agent: z
      .object({
        maxSteps: z.number().int().min(1).max(100).default(10),
        repeatLimit: z.number().int().min(2).max(20).default(3),
        systemPrompt: z.string().min(1).optional(),
        channelPrompts: z.array(channelPrompt).default([]),
        /** Code blocks longer than this many lines in an answer are also attached as files. */
        codeBlockArtifactLines: z.number().int().min(0).default(80),
        /** Longest user message accepted, in characters; longer ones are refused with a sentence. */
        maxUserMessageChars: z.number().int().positive().default(100_000),
        /** Above either, a turn gets the most relevant tools and a search; maxTools > 128 counts as 128. */
        toolBudget: z
          .object({
            maxTools: z.number().int().min(2).default(40),
            windowShare: z.number().gt(0).max(1).default(0.15),
          })
          .strict()
          .prefault({}),
        /** A small model asked before each turn which tool servers it needs (off unless named). */
        toolRouter: z
          .object({ model: z.string().min(1).optional() })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    memory: z
      .object({
        /** Compress when the active window passes this: a ratio of the context window (<= 1) or tokens (> 1). */
        compressAt: z.number().positive().default(0.6),
        keepMessages: z.number().int().min(2).default(6),
        pinned: z.string().optional(),
      })
      .strict()
      .prefault({}),
    mcp: mcpSettingsSchema,
    access: z
      .object({
        /** Only these people (user ids) may use the bot; empty: everyone. */
        users: z.array(z.string().min(1)).default([]),
        /** Discord: members with one of these roles may use it too (with `users`, either admits). */
        discordRoles: z.array(z.string().min(1)).default([]),
        /** Only in these channels (ids; a thread counts as its channel); empty: everywhere. */
        channels: z.array(z.string().min(1)).default([]),
        slackWorkspaces: z.array(z.string().min(1)).default([]),
        discordGuilds: z.array(z.string().min(1)).default([]),
        /** Direct messages: anyone allowed elsewhere (open), only the listed `users` (allowlist), or nobody (off). */
        dm: z.enum(["open", "allowlist", "off"]).default("open"),
        /** People (user ids) who may run the operators' commands in chat (`reconnect`); the terminal always may. */
        admins: z.array(z.string().min(1)).default([]),
      })
      .strict()
      .prefault({}),
    oauth: z
      .object({
        /**
         * The bot's address as browsers reach it, where OAuth sign-ins come back
         * (`<publicUrl>/oauth/callback`, served by the health server); its local address when unset.
         */
        publicUrl: z.url({ error: "must be an http:// or https:// URL" }).optional(),
      })
      .strict()
      .prefault({}),
    tracing: z
      .object({
        /**
         * Tool spans carry each call's arguments and result (secrets scrubbed, cut to 4,000
         * characters). Off by default: they may hold what people asked for.
         */
        toolContent: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
    usage: z
      .object({
        /**
         * US dollars per million tokens, by model id (a dated snapshot of it takes its price);
         * added to the built-in list. `cachedInput`: input read from the prompt cache;
         * `cacheWrite`: input written to it (Anthropic); without them, such input costs `input`.
         */
        prices: z
          .record(
            z.string().min(1),
            z
              .object({
                input: z.number().min(0),
                output: z.number().min(0),
                cachedInput: z.number().min(0).optional(),
                cacheWrite: z.number().min(0).optional(),
              })
              .strict(),
          )
          .default({}),
        /** Daily caps (reset at 00:00 UTC) per person and per channel; absent: no cap. */
        budgets: z
          .object({ perUser: budgetCap.optional(), perChannel: budgetCap.optional() })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    approvals: z
      .object({
        /** An unanswered approval ends as denied after this long. */
        expireAfterMs: z.number().int().min(10_000).default(600_000),
        rules: z.array(approvalRule).default([]),
        approvers: z.array(approverGroup).default([]),
      })
      .strict()
      .prefault({}),
    attachments: z
      .object({
        maxTextBytes: z.number().int().positive().default(200_000),
        maxImageBytes: z.number().int().positive().default(5_000_000),
      })
      .strict()
      .prefault({}),
    slack: z
      .object({
        slashCommand: z
          .string()
          .regex(/^\/[a-z0-9_-]+$/, "a slash and a lowercase name")
          .default("/switchboard"),
        port: z.number().int().min(1).max(65535).default(3000),
        followThreads: z.boolean().default(true),
        allowBots: z.boolean().default(false),
        suggestedPrompts: z
          .array(z.object({ title: z.string().min(1), message: z.string().min(1) }).strict())
          .max(4)
          .default([]),
        nativeStreaming: z.boolean().default(true),
        /** Slack agent sessions (agents.sessions.*, `agent_view` in the manifest): status, title and Slack's stop button per thread. */
        agentSessions: z.boolean().default(true),
        updateIntervalMs: z.number().int().min(250).default(1_200),
      })
      .strict()
      .prefault({}),
    discord: z
      .object({
        followThreads: z.boolean().default(true),
        allowBots: z.boolean().default(false),
        editIntervalMs: z.number().int().min(250).default(1_500),
        maxFileBytes: z
          .number()
          .int()
          .positive()
          .default(10 * 1024 * 1024),
        /**
         * This replica's gateway shard, `{ id, count }`: replicas split the bot's guilds
         * between them (Discord sends a guild's events to shard (guild_id >> 22) % count,
         * direct messages to shard 0). Without it, one shard: every replica gets every event.
         */
        shard: z
          .object({ id: z.number().int().min(0), count: z.number().int().min(1) })
          .strict()
          .refine((s) => s.id < s.count, { message: "shard.id must be below shard.count (ids start at 0)" })
          .optional(),
      })
      .strict()
      .prefault({}),
    health: z
      .object({
        enabled: z.boolean().default(true),
        host: z
          .string()
          .trim()
          // Node's listen() takes "" for every interface: never what an empty ${VAR} meant.
          .min(
            1,
            "must not be empty, which would listen on every interface: set an address (127.0.0.1, or 0.0.0.0 for all of them)",
          )
          .default("127.0.0.1"),
        port: z.number().int().min(0).max(65535).default(9464),
      })
      .strict()
      .prefault({}),
    shutdown: z
      .object({ graceMs: z.number().int().min(0).default(20_000) })
      .strict()
      .prefault({}),
  })
  .strict();

export type Config = z.infer<typeof configSchema>;
export type { Secrets };

export interface LoadedConfig {
  config: Config;
  secrets: Secrets;
  /** The file the config came from, or undefined when only defaults apply. */
  file?: string;
  mcpConfigFile?: string;
  storeUrl: string;
  /** Names of `${VAR}`s that were not set (reported by `doctor`). */
  missingVars: string[];
}

/** "llm.model: expected string, received number" for each problem, one per line. */
export function describeZodError(error: z.ZodError, sources: Readonly<Record<string, string>> = {}): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.length ? issue.path.join(".") : "(top level)";
      const from = sources[path];
      return `  ${path}${from ? ` (set by ${from})` : ""}: ${issue.message}`;
    })
    .join("\n");
}

/** The file's settings, its `${VAR}`s replaced, and those unset. */
function readYaml(file: string, env: NodeJS.ProcessEnv): { data: unknown; unset: UnsetVariable[] } {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (cause) {
    throw new SwitchboardError("config_invalid", `Cannot read the config file ${file}.`, { cause });
  }
  try {
    const read = interpolateYaml(text, env);
    return { data: read.data ?? {}, unset: read.unset };
  } catch (cause) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    throw new SwitchboardError("config_invalid", `The config file ${file} is not valid YAML: ${detail}`, {
      cause,
    });
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): LoadedConfig {
  const badLevel = logLevelProblem(env.LOG_LEVEL);
  if (badLevel) throw new SwitchboardError("config_invalid", badLevel);
  const explicit = nonEmpty(env.SWITCHBOARD_CONFIG);
  const file = explicit ? resolve(cwd, explicit) : resolve(cwd, "config/switchboard.yaml");
  if (explicit && !existsSync(file)) {
    throw new SwitchboardError(
      "config_invalid",
      `SWITCHBOARD_CONFIG points to ${file}, which does not exist. Copy config/switchboard.example.yaml there or unset it.`,
    );
  }
  const present = existsSync(file);
  const { data: raw, unset } = present ? readYaml(file, env) : { data: {}, unset: [] };
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new SwitchboardError(
      "config_invalid",
      `The config file ${file} must hold a YAML mapping at the top level.`,
    );
  }
  const withEnv = applyEnvOverrides(withoutEmptySections(raw as Record<string, unknown>), env);
  const parsed = configSchema.safeParse(withEnv);
  if (!parsed.success) {
    const overrides = envSources(env);
    const fromEnv = parsed.error.issues.some((issue) => overrides[issue.path.join(".")] !== undefined);
    const sources = { ...unsetSources(unset), ...overrides };
    const where = !present
      ? "The environment has"
      : fromEnv
        ? `The config file ${file} and the environment have`
        : `The config file ${file} has`;
    throw new SwitchboardError(
      "config_invalid",
      `${where} invalid settings:\n${describeZodError(parsed.error, sources)}`,
    );
  }
  const mcpExplicit = nonEmpty(env.MCP_CONFIG);
  const mcpConfigFile = mcpExplicit ? resolve(cwd, mcpExplicit) : resolve(cwd, "config/mcp.json");
  if (mcpExplicit && !existsSync(mcpConfigFile)) {
    throw new SwitchboardError(
      "config_invalid",
      `MCP_CONFIG points to ${mcpConfigFile}, which does not exist. Copy config/mcp.example.json there or unset it.`,
    );
  }
  return {
    config: parsed.data,
    secrets: readSecrets(env),
    file: present ? file : undefined,
    mcpConfigFile: existsSync(mcpConfigFile) ? mcpConfigFile : undefined,
    storeUrl: nonEmpty(env.STORE_URL) ?? "sqlite://data/switchboard.sqlite",
    missingVars: [...new Set(unset.map((u) => u.name))],
  };
}

/**
 * A section whose entries are all commented out (`modelSettings:` in the example file) is
 * null in YAML: it means "nothing set here", so the section's defaults apply.
 */
function withoutEmptySections(raw: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(raw).filter(([, value]) => value !== null));
}

/** The models a thread may use: the configured one first, then `models.allowed`. */
export function allowedModels(config: Config): string[] {
  return [...new Set([config.llm.model, ...config.models.allowed])];
}
