import pino, { type Logger } from "pino";

/**
 * Paths pino blanks in every record. Tokens reach logs mostly through SDK errors that
 * carry request headers or configs, so both header and option spellings are listed.
 */
const REDACT = [
  "token",
  "*.token",
  "apiKey",
  "*.apiKey",
  "appToken",
  "*.appToken",
  "botToken",
  "*.botToken",
  "signingSecret",
  "*.signingSecret",
  "authorization",
  "*.authorization",
  "*.Authorization",
  "*.headers.authorization",
  "*.headers.Authorization",
  "*.headers['x-api-key']",
  "*.*.headers.authorization",
  "*.*.headers.Authorization",
];

/** Token shapes of Slack, Discord, OpenAI and Anthropic, scrubbed from free text. */
const TOKEN_PATTERNS = [
  /xox[abposr]-[A-Za-z0-9-]+/g,
  /xapp-[A-Za-z0-9-]+/g,
  /sk-(?:ant-)?[A-Za-z0-9_-]{8,}/g,
  /Bearer\s+[A-Za-z0-9._~+/=-]+/gi,
  /Bot\s+[A-Za-z0-9._-]{20,}/g,
];

const secretValues = new Set<string>();

/** Registers a secret value (from the environment) to be scrubbed wherever it appears. */
export function registerSecret(value: string | undefined): void {
  if (value && value.length >= 6) secretValues.add(value);
}

export function scrub(text: string): string {
  let out = text;
  for (const v of secretValues) out = out.split(v).join("[redacted]");
  for (const re of TOKEN_PATTERNS) out = out.replace(re, "[redacted]");
  return out;
}

/** pino's levels, most talkative first; README names the four an operator needs. */
export const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * LOG_LEVEL as pino takes it: empty or unset is "info", any case is taken; undefined for
 * a word that is no level (loadConfig refuses it with a sentence, see logLevelProblem).
 */
export function logLevelOf(value: string | undefined): LogLevel | undefined {
  const level = (value ?? "").trim().toLowerCase() || "info";
  return (LOG_LEVELS as readonly string[]).includes(level) ? (level as LogLevel) : undefined;
}

/** The sentence for a LOG_LEVEL that is no level; undefined when it is one (or unset). */
export function logLevelProblem(value: string | undefined): string | undefined {
  if (logLevelOf(value)) return undefined;
  return `LOG_LEVEL is "${value}", which is not a log level: set one of debug, info (the default), warn, error (or trace, fatal, silent), or leave it unset.`;
}

function createLogger(): Logger {
  // The logger exists before any configuration is read: a bad level is refused there, with a sentence.
  const level = logLevelOf(process.env.LOG_LEVEL) ?? "info";
  const pretty = process.stderr.isTTY && !process.env.CI && process.env.NODE_ENV !== "test";
  return pino(
    {
      level,
      redact: { paths: REDACT, censor: "[redacted]" },
      hooks: {
        // The last line of defence: scrub the serialised record, whatever path a secret took.
        streamWrite: (s) => scrub(s),
      },
    },
    pretty
      ? pino.transport({ target: "pino-pretty", options: { destination: 2, colorize: true } })
      : pino.destination(2),
  );
}

export const log: Logger = createLogger();
