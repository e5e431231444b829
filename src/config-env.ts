/*
 * What the environment adds to the config file: the few settings it overrides, and the
 * secrets, which only it holds.
 */

/** The platforms' and model services' credentials and addresses, read from the environment only. */
export interface Secrets {
  slackBotToken?: string;
  slackAppToken?: string;
  slackSigningSecret?: string;
  slackApiUrl?: string;
  discordToken?: string;
  discordApiUrl?: string;
  discordGuildId?: string;
  openaiApiKey?: string;
  openaiBaseUrl?: string;
  anthropicApiKey?: string;
  anthropicBaseUrl?: string;
}

export const nonEmpty = (v: string | undefined): string | undefined =>
  v && v.trim() !== "" ? v.trim() : undefined;

export function applyEnvOverrides(
  raw: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
): Record<string, unknown> {
  const llm = { ...((raw.llm as Record<string, unknown> | undefined) ?? {}) };
  const provider = nonEmpty(env.LLM_PROVIDER);
  const model = nonEmpty(env.LLM_MODEL);
  if (provider) llm.provider = provider;
  if (model) llm.model = model;
  const out: Record<string, unknown> = { ...raw, llm };
  const port = nonEmpty(env.PORT);
  if (port) out.slack = { ...((raw.slack as Record<string, unknown> | undefined) ?? {}), port: Number(port) };
  return out;
}

/** The settings the environment overrides (see applyEnvOverrides), by path: the variable to fix. */
export function envSources(env: NodeJS.ProcessEnv): Record<string, string> {
  const sources: Record<string, string> = {};
  if (nonEmpty(env.LLM_PROVIDER)) sources["llm.provider"] = "LLM_PROVIDER";
  if (nonEmpty(env.LLM_MODEL)) sources["llm.model"] = "LLM_MODEL";
  if (nonEmpty(env.PORT)) sources["slack.port"] = "PORT";
  return sources;
}

export function readSecrets(env: NodeJS.ProcessEnv): Secrets {
  return {
    slackBotToken: nonEmpty(env.SLACK_BOT_TOKEN),
    slackAppToken: nonEmpty(env.SLACK_APP_TOKEN),
    slackSigningSecret: nonEmpty(env.SLACK_SIGNING_SECRET),
    slackApiUrl: nonEmpty(env.SLACK_API_URL),
    discordToken: nonEmpty(env.DISCORD_TOKEN),
    discordApiUrl: nonEmpty(env.DISCORD_API_URL),
    discordGuildId: nonEmpty(env.DISCORD_GUILD_ID),
    openaiApiKey: nonEmpty(env.OPENAI_API_KEY),
    openaiBaseUrl: nonEmpty(env.OPENAI_BASE_URL),
    anthropicApiKey: nonEmpty(env.ANTHROPIC_API_KEY),
    anthropicBaseUrl: nonEmpty(env.ANTHROPIC_BASE_URL),
  };
}
