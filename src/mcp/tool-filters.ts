import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { closestTo } from "../core/closest.js";
import { baseToolName, sanitizeNamePart } from "./names.js";
import type { ServerConfig } from "./servers.js";

/** Config filters, and tools that only run as tasks (the hub calls tools directly). */
export function servableTools(tools: Tool[], config: ServerConfig): Tool[] {
  const { enabledTools, disabledTools } = config;
  return tools.filter(
    (t) =>
      t.execution?.taskSupport !== "required" &&
      (enabledTools === undefined || enabledTools.includes(t.name)) &&
      !disabledTools?.includes(t.name),
  );
}

/**
 * A sentence for each `enabledTools` / `disabledTools` entry that names no tool the server
 * lists. Such an entry does nothing, and silently so: a write tool meant to be disabled
 * stays offered. The usual cause is the model-facing `server__tool` name, or a typo.
 */
export function filterWarnings(tools: readonly Tool[], config: ServerConfig): string[] {
  const names = tools.map((t) => t.name);
  const prefix = `${sanitizeNamePart(config.name)}__`;
  const problems: string[] = [];
  const check = (field: "enabledTools" | "disabledTools", entries: readonly string[] | undefined) => {
    const effect = field === "enabledTools" ? "it enables nothing" : "it disables nothing";
    for (const entry of entries ?? []) {
      if (names.includes(entry)) continue;
      const said = `${field} names "${entry}", which is not a tool of this server, so ${effect}`;
      const meant = names.find((n) => baseToolName({ server: config.name, tool: n }) === entry);
      const near = meant ?? closestTo(entry, names);
      problems.push(
        meant
          ? `${said}: name the tool as the server lists it, without the "${prefix}" that the model sees ("${meant}").`
          : near
            ? `${said}: did you mean "${near}"?`
            : `${said}.`,
      );
    }
  };
  check("enabledTools", config.enabledTools);
  check("disabledTools", config.disabledTools);
  return problems;
}
