import { closestTo } from "../core/closest.js";

/** The keys a server entry of mcp.json may have that Switchboard reads, per transport. */
const COMMON = ["type", "enabledTools", "disabledTools", "timeoutMs", "disabled"];
const OWN_KEYS = {
  stdio: [...COMMON, "command", "args", "env", "cwd"],
  http: [...COMMON, "url", "headers", "oauth"],
} as const;
const EVERY_OWN_KEY = new Set<string>([...OWN_KEYS.stdio, ...OWN_KEYS.http]);

/**
 * Keys other MCP clients put in the same file (Cline's autoApprove, alwaysAllow, timeout
 * and transportType, VS Code's envFile and dev, descriptions): read by them, not by us,
 * and never a misspelling of ours, however close (Cline's `timeout` is in seconds).
 */
const OTHER_CLIENTS_KEYS = new Set([
  "autoApprove",
  "alwaysAllow",
  "timeout",
  "transportType",
  "envFile",
  "dev",
  "description",
  "name",
]);

/**
 * A sentence for each key of a server entry that nothing reads and that looks like one of
 * ours misspelt (`disabledtools`): ignored as before, but said, since what it meant to
 * change (a tool disabled, a server turned off) silently does not happen.
 */
export function misspeltKeys(
  entry: Record<string, unknown>,
  transport: "stdio" | "http",
  path: string,
): string[] {
  const own: readonly string[] = OWN_KEYS[transport];
  const problems: string[] = [];
  for (const key of Object.keys(entry)) {
    if (EVERY_OWN_KEY.has(key) || OTHER_CLIENTS_KEYS.has(key)) continue;
    const meant = closestTo(key, own);
    if (meant)
      problems.push(
        `${path}.${key} is not a setting Switchboard reads, so it is ignored: did you mean "${meant}"?`,
      );
  }
  return problems;
}
