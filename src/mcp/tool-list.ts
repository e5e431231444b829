import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { PaginatedResultSchema, type Tool, ToolSchema } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { log } from "../log.js";
import type { ServerConfig } from "./servers.js";
import { filterWarnings, servableTools } from "./tool-filters.js";
import { listAll } from "./transport.js";

/** A page of tools/list as sent: each tool is checked on its own (see listAllTools). */
const LenientToolPage = PaginatedResultSchema.extend({ tools: z.array(z.unknown()) });

/** Members a tool can be called without: dropped, with a note, when malformed. */
const OPTIONAL = new Set([
  "title",
  "description",
  "outputSchema",
  "annotations",
  "execution",
  "icons",
  "_meta",
]);

export interface ToolListing {
  tools: Tool[];
  /** Sentences about the tools left out or mended, for the server's warnings. */
  problems: string[];
}

/**
 * Every page of `tools/list`. The SDK's listTools checks the whole page against the spec's
 * schema and compiles every outputSchema with Ajv: one tool with `inputSchema: {}` (many
 * Python servers) or a `$ref` to nowhere fails the listing, so the server never connects
 * and is tried again for ever. Calls go through tools/call directly (see output-check.ts),
 * so nothing needs that check: each tool is mended where it can be and left out alone
 * where it cannot.
 */
export async function listAllTools(
  client: Client,
  timeout: number,
  signal?: AbortSignal,
): Promise<ToolListing> {
  const problems: string[] = [];
  const tools = await listAll(async (cursor) => {
    const page = await client.request(
      { method: "tools/list", ...(cursor !== undefined && { params: { cursor } }) },
      LenientToolPage,
      { timeout, ...(signal && { signal }) },
    );
    const items: Tool[] = [];
    for (const raw of page.tools) {
      const read = readTool(raw);
      if (read.problem) problems.push(read.problem);
      if (read.tool) items.push(read.tool);
    }
    return { items, ...(page.nextCursor !== undefined && { nextCursor: page.nextCursor }) };
  });
  return { tools, problems };
}

/** A server's tool listings as offered: filtered, their problems said once per change. */
export class ListedTools {
  /** The tools left out or mended, and the filters' entries that named no tool, at the last listing. */
  problems: string[] = [];

  constructor(private readonly config: ServerConfig) {}

  servable({ tools, problems: malformed }: ToolListing): Tool[] {
    const unmatched = filterWarnings(tools, this.config);
    const problems = [...malformed, ...unmatched];
    // A restart or a list_changed with the same tools says nothing new.
    if (problems.join("\n") !== this.problems.join("\n")) {
      const server = this.config.name;
      if (malformed.length > 0)
        log.warn({ server, problems: malformed }, "the server lists tools that are not valid MCP");
      if (unmatched.length > 0)
        log.warn(
          { server, problems: unmatched },
          "mcp.json's tool filters for this server name tools it does not list",
        );
    }
    this.problems = problems;
    return servableTools(tools, this.config);
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** One listed tool, mended where it can be called all the same; a sentence for what was wrong. */
function readTool(raw: unknown): { tool?: Tool; problem?: string } {
  if (!isRecord(raw) || typeof raw.name !== "string" || raw.name === "") {
    return { problem: "a tool without a name was left out" };
  }
  const name = raw.name;
  const candidate: Record<string, unknown> = { ...raw, inputSchema: objectSchema(raw.inputSchema) };
  const dropped: string[] = [];
  for (let round = 0; round < OPTIONAL.size + 1; round++) {
    const parsed = ToolSchema.safeParse(candidate);
    if (parsed.success) {
      const mended = dropped.length > 0 ? `its malformed ${dropped.join(", ")} ignored` : undefined;
      return {
        tool: parsed.data as Tool,
        ...(mended && { problem: `the tool "${name}" is offered with ${mended}` }),
      };
    }
    const issue = parsed.error.issues[0];
    const member = String(issue?.path[0] ?? "");
    if (!OPTIONAL.has(member) || !(member in candidate)) {
      const where = issue?.path.join(".") || "the tool";
      return { problem: `the tool "${name}" was left out: ${where}: ${issue?.message ?? "not valid"}` };
    }
    delete candidate[member];
    dropped.push(member);
  }
  return { problem: `the tool "${name}" was left out: not valid` };
}

/**
 * An input schema the spec allows: `type: "object"` at the root. None, or one that is not
 * an object, takes no arguments; one without a type is an object's (the arguments of
 * tools/call always are). `true` and `false` stand for any value and none (JSON Schema's
 * boolean schemas), which the SDK's check of properties refuses.
 */
function objectSchema(schema: unknown): unknown {
  if (!isRecord(schema)) return { type: "object", properties: {} };
  const mended: Record<string, unknown> = { ...schema, type: schema.type ?? "object" };
  if (isRecord(schema.properties)) {
    mended.properties = Object.fromEntries(
      Object.entries(schema.properties).map(([key, value]) => [
        key,
        value === true ? {} : value === false ? { not: {} } : value,
      ]),
    );
  }
  return mended;
}
