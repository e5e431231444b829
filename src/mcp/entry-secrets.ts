import { variableNames } from "../interpolate.js";

/** A variable whose name says it holds a secret, wherever in an entry it is used. */
const SECRET_NAME = /TOKEN|KEY|SECRET|PASSWORD|PASS|AUTH|CREDENTIAL/i;
/** An entry's members that carry a key whatever the variable is called (a server URL's path, a header). */
const SECRET_MEMBERS = new Set(["url", "headers", "env"]);

/**
 * The values an mcp.json entry's `${VAR}`s bring in where secrets go: anywhere in its
 * `url`, `headers` and `env` (Zapier's `url` is `${ZAPIER_MCP_URL}`, its key in the path),
 * and from variables named like secrets anywhere else (`args: ["--token", "${GH_TOKEN}"]`).
 * Others (`${HOME}` in a path) stay readable in logs.
 */
export function entrySecrets(entry: unknown, env: NodeJS.ProcessEnv): string[] {
  if (entry === null || typeof entry !== "object" || Array.isArray(entry)) return [];
  const found = new Set<string>();
  for (const [member, value] of Object.entries(entry)) {
    for (const name of variablesIn(value)) {
      const set = env[name];
      if (set && (SECRET_MEMBERS.has(member) || SECRET_NAME.test(name))) found.add(set);
    }
  }
  return [...found];
}

function variablesIn(value: unknown): string[] {
  if (typeof value === "string") return variableNames(value);
  if (Array.isArray(value)) return value.flatMap(variablesIn);
  if (value && typeof value === "object") return Object.values(value).flatMap(variablesIn);
  return [];
}
