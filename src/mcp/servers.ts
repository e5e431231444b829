import { existsSync, readFileSync } from "node:fs";
import { z } from "zod";
import { SwitchboardError } from "../core/errors.js";
import { interpolate, unsupportedPlaceholders } from "../interpolate.js";
import { registerSecret } from "../log.js";
import { misspeltKeys } from "./config-keys.js";
import { entrySecrets } from "./entry-secrets.js";

/** What every server entry may carry, whatever its transport. */
interface ServerCommon {
  name: string;
  /** Only these tools are offered (before `disabledTools` removes more). */
  enabledTools?: string[];
  disabledTools?: string[];
  /** Per-call timeout for this server; the hub's `callTimeoutMs` otherwise. */
  timeoutMs?: number;
  /** Kept in the list so that `doctor` can show it; the hub never starts it. */
  disabled: boolean;
  /** Keys of its entry that nothing reads and that look like ours misspelt, as sentences. */
  warnings?: string[];
}

export interface StdioServerConfig extends ServerCommon {
  transport: "stdio";
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
}

export interface HttpServerConfig extends ServerCommon {
  transport: "http";
  url: string;
  headers: Record<string, string>;
  /** Signs in with OAuth (the MCP authorization spec); a client registered by hand, or dynamic registration. */
  oauth?: OAuthSettings;
}

export interface OAuthSettings {
  clientId?: string;
  clientSecret?: string;
  scope?: string;
  /** Each person signs in with their own account, and their token serves only their turns. */
  perUser?: boolean;
}

export type ServerConfig = StdioServerConfig | HttpServerConfig;

const nonEmpty = z
  .string({ error: "must be a non-empty string" })
  .trim()
  .min(1, "must be a non-empty string");
const stringList = z.array(z.string({ error: "must be a list of strings" }), {
  error: "must be a list of strings",
});
const stringMap = z.record(z.string(), z.string({ error: "must be a string" }), {
  error: "must be an object mapping names to strings",
});

const common = {
  enabledTools: stringList.optional(),
  disabledTools: stringList.optional(),
  timeoutMs: z
    .number({ error: "must be a positive whole number of milliseconds" })
    .int("must be a positive whole number of milliseconds")
    .positive("must be a positive whole number of milliseconds")
    .optional(),
  disabled: z.boolean({ error: "must be true or false" }).default(false),
};

// Loose objects: files shared with other MCP clients carry their keys (autoApprove, alwaysAllow…).
const stdioEntry = z.looseObject({
  type: z.literal("stdio").optional(),
  command: nonEmpty,
  args: stringList.default([]),
  env: stringMap.default({}),
  cwd: nonEmpty.optional(),
  ...common,
});

const httpUrl = z
  .string({ error: "must be an http:// or https:// URL" })
  .refine(
    (u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol),
    "must be an http:// or https:// URL",
  );

const oauthEntry = z.union(
  [
    z.literal(true),
    z.strictObject({
      clientId: nonEmpty.optional(),
      clientSecret: nonEmpty.optional(),
      scope: nonEmpty.optional(),
      perUser: z.boolean({ error: "must be true or false" }).optional(),
    }),
  ],
  {
    error: 'must be true or an object with "clientId", "clientSecret", "scope" and "perUser" (each optional)',
  },
);

const httpEntry = z.looseObject({
  type: z.enum(["http", "streamable-http", "streamableHttp"]).optional(),
  url: httpUrl,
  headers: stringMap.default({}),
  oauth: oauthEntry.optional(),
  ...common,
});

type Problem = { path: string; message: string };

function fail(file: string, problems: Problem[]): never {
  const lines = problems.map((p) => `${file}: ${p.path} ${p.message}`);
  throw new SwitchboardError("config_invalid", lines.join("\n"));
}

function issuesOf(error: z.ZodError, prefix: string): Problem[] {
  return error.issues.map((issue) => {
    const path = [prefix, ...issue.path.map(String)].join(".");
    // Zod's own wording ("Invalid input: expected string…") only shows for shapes we did not word ourselves.
    const message = issue.message.startsWith("must") ? issue.message : `is invalid: ${issue.message}`;
    return { path, message };
  });
}

function transportOf(entry: Record<string, unknown>, path: string): "stdio" | "http" | Problem {
  const type = entry.type;
  if (type === "sse") {
    return {
      path: `${path}.type`,
      message: 'is "sse", which is not supported: use a streamable HTTP endpoint with type "http"',
    };
  }
  if (type === "stdio") return "stdio";
  if (type === "http" || type === "streamable-http" || type === "streamableHttp") return "http";
  if (type !== undefined) {
    return { path: `${path}.type`, message: 'must be "stdio", "http" or "streamable-http"' };
  }
  if ("command" in entry && "url" in entry) {
    return { path, message: 'must have either "command" (stdio) or "url" (streamable HTTP), not both' };
  }
  if ("url" in entry) return "http";
  if ("command" in entry) return "stdio";
  return { path, message: 'must have a "command" (stdio server) or a "url" (streamable HTTP server)' };
}

function parseEntry(name: string, raw: unknown, path: string): ServerConfig | Problem[] {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    return [{ path, message: "must be an object" }];
  }
  const entry = raw as Record<string, unknown>;
  const transport = transportOf(entry, path);
  if (typeof transport === "object") return [transport];
  const misspelt = misspeltKeys(entry, transport, path);
  const warnings = misspelt.length > 0 ? { warnings: misspelt } : {};
  if (transport === "stdio") {
    const parsed = stdioEntry.safeParse(entry);
    if (!parsed.success) return issuesOf(parsed.error, path);
    const { command, args, env, cwd, enabledTools, disabledTools, timeoutMs, disabled } = parsed.data;
    return {
      name,
      transport,
      command,
      args,
      env,
      ...(cwd !== undefined && { cwd }),
      ...(enabledTools && { enabledTools }),
      ...(disabledTools && { disabledTools }),
      ...(timeoutMs !== undefined && { timeoutMs }),
      disabled,
      ...warnings,
    };
  }
  const parsed = httpEntry.safeParse(entry);
  if (!parsed.success) return issuesOf(parsed.error, path);
  const { url, headers, oauth, enabledTools, disabledTools, timeoutMs, disabled } = parsed.data;
  return {
    name,
    transport,
    url,
    headers,
    ...(oauth !== undefined && { oauth: oauth === true ? {} : oauth }),
    ...(enabledTools && { enabledTools }),
    ...(disabledTools && { disabledTools }),
    ...(timeoutMs !== undefined && { timeoutMs }),
    disabled,
    ...warnings,
  };
}

/** A problem for each string under `value` holding a `${…}` that is not replaced (see unsupportedPlaceholders). */
function placeholdersIn(value: unknown, path: string): Problem[] {
  if (typeof value === "string")
    return unsupportedPlaceholders(value).map((p) => ({
      path,
      message: `uses ${p}, which is not supported: only \${VAR}, \${VAR:-default} and \${env:VAR} are replaced, from the environment (put the value in a variable and write \${VAR})`,
    }));
  if (Array.isArray(value)) return value.flatMap((v, i) => placeholdersIn(v, `${path}.${i}`));
  if (value && typeof value === "object")
    return Object.entries(value).flatMap(([k, v]) => placeholdersIn(v, `${path}.${k}`));
  return [];
}

/**
 * Reads the `mcpServers` document other MCP clients use (VS Code's top key `servers`
 * too), with `${VAR}` (and VS Code's `${env:VAR}`) interpolation in every string; any
 * other `${…}` is a problem. Every bad entry is reported at once, each as
 * `file: mcpServers.name.field must …`. Unset variables are pushed to `missing`, and the
 * values of those that bring in secrets (see entrySecrets) to `secrets`.
 */
export function parseMcpConfig(
  json: unknown,
  file: string,
  env: NodeJS.ProcessEnv = process.env,
  missing: string[] = [],
  secrets: string[] = [],
): ServerConfig[] {
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    fail(file, [{ path: "(top level)", message: 'must be an object with an "mcpServers" object' }]);
  }
  const doc = json as Record<string, unknown>;
  const key = "mcpServers" in doc ? "mcpServers" : "servers" in doc ? "servers" : undefined;
  if (key === undefined) {
    fail(file, [{ path: "(top level)", message: 'must have an "mcpServers" object' }]);
  }
  const servers = doc[key];
  if (servers === null || typeof servers !== "object" || Array.isArray(servers)) {
    fail(file, [{ path: key, message: "must be an object mapping server names to server settings" }]);
  }
  const out: ServerConfig[] = [];
  const problems: Problem[] = [];
  for (const [name, raw] of Object.entries(servers as Record<string, unknown>)) {
    const path = `${key}.${name}`;
    if (name.trim() === "") {
      problems.push({ path: key, message: "has a server with an empty name" });
      continue;
    }
    const unsupported = placeholdersIn(raw, path);
    if (unsupported.length > 0) {
      problems.push(...unsupported);
      continue;
    }
    secrets.push(...entrySecrets(raw, env));
    const parsed = parseEntry(name, interpolate(raw, env, missing), path);
    if (Array.isArray(parsed)) problems.push(...parsed);
    else out.push(parsed);
  }
  if (problems.length > 0) fail(file, problems);
  return out;
}

/**
 * Reads and parses the mcpServers file; no file given means no servers. The secrets its
 * variables bring in are scrubbed from logs and errors from then on.
 */
export function loadMcpConfig(
  file: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  missing: string[] = [],
): ServerConfig[] {
  if (file === undefined) return [];
  if (!existsSync(file)) {
    throw new SwitchboardError("config_invalid", `The MCP config file ${file} does not exist.`);
  }
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (cause) {
    throw new SwitchboardError("config_invalid", `Cannot read the MCP config file ${file}.`, { cause });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    throw new SwitchboardError("config_invalid", `${file}: not valid JSON: ${detail}`, { cause });
  }
  const secrets: string[] = [];
  const servers = parseMcpConfig(json, file, env, missing, secrets);
  for (const secret of secrets) registerSecret(secret);
  return servers;
}
