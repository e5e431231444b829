import type { CallToolResult, ReadResourceResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { SpanStatusCode } from "@opentelemetry/api";
import { SwitchboardError } from "../core/errors.js";
import { GEN_AI, inSpan } from "../core/spans.js";
import { log, scrub } from "../log.js";
import { type CallAnswer, ServerConnection } from "./connection.js";
import { ToolNameMap } from "./names.js";
import type { ServerAuth } from "./oauth/sign-ins.js";
import { PerUserServer, SIGN_IN_TOOL } from "./per-user.js";
import { answerBytes } from "./read-buffer.js";
import { toModelResult } from "./results.js";
import { checkArguments, toProviderSchema } from "./schema.js";
import type { ServerConfig } from "./servers.js";
import type {
  PromptEntry,
  ServerStatus,
  ToolCallOptions,
  ToolEntry,
  ToolHints,
  ToolHub,
  ToolOutcome,
} from "./types.js";

export interface HubOptions {
  callTimeoutMs: number;
  connectTimeoutMs: number;
  maxOutputChars: number;
  blockedServers: readonly string[];
  maxRestarts: number;
  clientInfo?: { name: string; version: string };
  /** Tool spans carry the call's arguments and result (scrubbed of secrets, cut to 4,000 characters). */
  traceContent?: boolean;
  /** Sign-ins of the servers that use OAuth. */
  oauth?: ServerAuth;
  /** The most the bot reads of one message from a stdio server, in MB (2^20 bytes). */
  maxAnswerMb?: number;
}

/** How much of a tool call's arguments or result a span carries when content is traced. */
const TRACED_CHARS = 4_000;

interface CatalogItem {
  entry: ToolEntry;
  /** The server's own schema: arguments are checked against it, not the provider copy. */
  original: Record<string, unknown>;
  /** Where the call goes: the server's connection, or the calling person's own (per-user servers). */
  source: ServerConnection | PerUserServer;
}

const MAX_NAMES_LISTED = 60;

/** Provider copies, one per schema object the server sent, so that a rebuild costs nothing. */
const providerSchemas = new WeakMap<object, Record<string, unknown>>();

function providerSchema(tool: Tool): Record<string, unknown> {
  let schema = providerSchemas.get(tool.inputSchema);
  if (!schema) {
    schema = toProviderSchema(tool.inputSchema);
    providerSchemas.set(tool.inputSchema, schema);
  }
  return schema;
}

/**
 * All configured MCP servers behind one catalog. Servers connect in parallel and fail
 * alone; the catalog follows `tools/list_changed`, deaths and restarts.
 */
export class McpHub implements ToolHub {
  private readonly connections: ServerConnection[];
  private readonly perUser: PerUserServer[];
  /** Every server in the configuration's order, as `/tools` lists them. */
  private readonly servers: Array<ServerConnection | PerUserServer>;
  private catalog = new Map<string, CatalogItem>();
  private readonly listeners = new Set<() => void>();
  /** How much of a call's linked resources may be read (`maxAnswerMb`). */
  private readonly linkBudget: number;

  private constructor(
    servers: readonly ServerConfig[],
    private readonly opts: HubOptions,
  ) {
    this.linkBudget = answerBytes(opts.maxAnswerMb);
    const clientInfo = opts.clientInfo ?? { name: "switchboard", version: "0.1.0" };
    const oauth = opts.oauth;
    this.servers = servers
      .filter((s) => !s.disabled)
      .map((config) => {
        const connectionOpts = { ...opts, clientInfo, onChange: () => this.changed() };
        const blocked = opts.blockedServers.includes(config.name);
        return config.transport === "http" && oauth?.perUser(config.name)
          ? new PerUserServer(config, { ...connectionOpts, oauth }, blocked)
          : new ServerConnection(config, connectionOpts, blocked);
      });
    this.connections = this.servers.filter((s) => s instanceof ServerConnection);
    this.perUser = this.servers.filter((s) => s instanceof PerUserServer);
  }

  /** Resolves once every server is connected or has failed; a slow one is bounded by connectTimeoutMs. */
  static async start(servers: readonly ServerConfig[], opts: HubOptions): Promise<McpHub> {
    const hub = new McpHub(servers, opts);
    await Promise.all(hub.servers.map((c) => c.start()));
    hub.rebuild();
    return hub;
  }

  tools(servers?: readonly string[]): ToolEntry[] {
    const all = [...this.catalog.values()].map((item) => item.entry);
    return servers ? all.filter((e) => servers.includes(e.server)) : all;
  }

  status(): ServerStatus[] {
    return this.servers.map((c) => c.status());
  }

  async signedOut(server: string, owner: string): Promise<void> {
    await this.perUser.find((s) => s.name === server)?.signedOut(owner);
  }

  /** Called when the catalog or a server's status changes; returns the way to stop listening. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Tries a server again now, closing its circuit; undefined for a name that is not configured. */
  async reconnect(name: string): Promise<ServerStatus | undefined> {
    const server = this.servers.find((c) => c.name === name);
    if (!server) return undefined;
    if (server instanceof PerUserServer) return server.reconnect();
    await server.reconnect();
    return server.status();
  }

  prompts(): PromptEntry[] {
    return this.connections
      .filter((c) => c.state === "connected")
      .flatMap((c) =>
        c.prompts.map((p) => ({
          server: c.name,
          name: p.name,
          description: p.description ?? p.title ?? "",
          arguments: (p.arguments ?? []).map((a) => ({
            name: a.name,
            ...(a.description ? { description: a.description } : {}),
            required: a.required === true,
          })),
        })),
      );
  }

  async getPrompt(server: string, name: string, args: Record<string, string>): Promise<string> {
    const connection = this.connections.find((c) => c.name === server);
    if (!connection) throw new SwitchboardError("tool_failed", `There is no tool server named "${server}".`);
    let result: Awaited<ReturnType<typeof connection.getPrompt>>;
    try {
      result = await connection.getPrompt(name, args);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      throw new SwitchboardError("tool_failed", `prompt ${server}/${name} failed: ${why}`, {
        userMessage: `The prompt ${name} from ${server} did not work: ${why.slice(0, 300)}. Check its arguments with /prompts.`,
      });
    }
    const parts = result.messages.map((m) =>
      m.content.type === "text"
        ? m.content.text
        : m.content.type === "resource" && "text" in m.content.resource
          ? String(m.content.resource.text)
          : `[${m.content.type} content from the prompt, not shown]`,
    );
    return parts.join("\n\n");
  }

  /** One tool call in a span ("execute_tool {tool}") under the turn's. */
  call(name: string, args: Record<string, unknown>, opts: ToolCallOptions = {}): Promise<ToolOutcome> {
    const tool = this.catalog.get(name)?.entry.tool ?? name;
    return inSpan(
      `execute_tool ${tool}`,
      { [GEN_AI.operation]: "execute_tool", [GEN_AI.toolName]: tool },
      async (span) => {
        const outcome = await this.callTool(name, args, opts);
        span.setAttributes({
          "switchboard.mcp.server": outcome.server,
          "switchboard.tool.outcome": outcome.ok ? "ok" : "error",
        });
        if (!outcome.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: "the tool call failed" });
        if (this.opts.traceContent) {
          span.setAttributes({
            [GEN_AI.toolArguments]: scrub(JSON.stringify(args) ?? "").slice(0, TRACED_CHARS),
            [GEN_AI.toolResult]: scrub(outcome.text).slice(0, TRACED_CHARS),
          });
        }
        return outcome;
      },
    );
  }

  private async callTool(
    name: string,
    args: Record<string, unknown>,
    opts: ToolCallOptions,
  ): Promise<ToolOutcome> {
    const started = performance.now();
    const item = this.catalog.get(name);
    const outcome = (
      server: string,
      tool: string,
      ok: boolean,
      text: string,
      artifacts: ToolOutcome["artifacts"] = [],
    ) => ({
      ok,
      text,
      artifacts,
      ms: Math.round(performance.now() - started),
      server,
      tool,
    });
    if (!item) {
      const names = [...this.catalog.keys()];
      const listed =
        names.slice(0, MAX_NAMES_LISTED).join(", ") + (names.length > MAX_NAMES_LISTED ? ", …" : "");
      return outcome("", name, false, `There is no tool named "${name}"; available: ${listed || "(none)"}.`);
    }
    const { server, tool } = item.entry;
    try {
      const input = args !== null && typeof args === "object" && !Array.isArray(args) ? args : {};
      const invalid = checkArguments(name, item.original, input);
      if (invalid) return outcome(server, tool, false, invalid);
      const source = item.source;
      let connection: ServerConnection;
      let answer: CallAnswer;
      if (source instanceof PerUserServer) {
        const own = await source.connectionFor(opts);
        if (typeof own === "string") return outcome(server, tool, false, own);
        if (tool === SIGN_IN_TOOL && !own.tools.some((t) => t.name === SIGN_IN_TOOL))
          return outcome(server, tool, true, source.signedInText(own));
        const answered = await source.callOn(own, tool, input, opts);
        if (typeof answered === "string") return outcome(server, tool, false, answered);
        ({ connection, answer } = answered);
      } else {
        connection = source;
        answer = await connection.call(tool, input, opts);
      }
      if ("failure" in answer) return outcome(server, tool, false, answer.failure.text);
      const linked = await withLinkedResources(answer.result, connection, this.linkBudget, opts.signal);
      const result = toModelResult(linked, { maxChars: this.opts.maxOutputChars, server, tool });
      return outcome(server, tool, result.ok, result.text, result.artifacts);
    } catch (err) {
      log.error({ err, server, tool }, "mcp call failed unexpectedly");
      return outcome(
        server,
        tool,
        false,
        "The tool call failed inside the bot; try again or use another tool.",
      );
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.servers.map((c) => c.close()));
    this.listeners.clear();
  }

  private changed(): void {
    this.rebuild();
    for (const listener of this.listeners) {
      try {
        listener();
      } catch (err) {
        log.warn({ err }, "mcp hub change listener threw");
      }
    }
  }

  /** Connected servers and restarting ones (their last tools, so that names stay put across a restart). */
  private rebuild(): void {
    const live = [
      ...this.connections
        .filter((c) => c.state === "connected" || c.state === "reconnecting")
        .map((c) => ({ source: c, tools: c.tools })),
      ...this.perUser.map((s) => ({ source: s, tools: s.catalog() })),
    ];
    const names = new ToolNameMap(
      live.flatMap(({ source, tools }) => tools.map((t) => ({ server: source.name, tool: t.name }))),
    );
    const catalog = new Map<string, CatalogItem>();
    for (const { source: connection, tools } of live) {
      for (const tool of tools) {
        const name = names.nameOf(connection.name, tool.name);
        if (name === undefined || catalog.has(name)) continue;
        const entry: ToolEntry = {
          name,
          server: connection.name,
          tool: tool.name,
          description: tool.description ?? tool.title ?? "",
          inputSchema: providerSchema(tool),
          ...(tool.annotations ? { annotations: hintsOf(tool.annotations) } : {}),
        };
        catalog.set(name, { entry, original: tool.inputSchema, source: connection });
      }
    }
    this.catalog = catalog;
  }
}

function hintsOf(a: NonNullable<Tool["annotations"]>): ToolHints {
  const { readOnlyHint, destructiveHint, idempotentHint, openWorldHint } = a;
  return { readOnlyHint, destructiveHint, idempotentHint, openWorldHint };
}

/** At most this many resource links of one result are read and attached. */
const LINKS_READ = 5;

/** A resource's contents as sent: its text, or its blob's base64. */
const sizeOf = (contents: ReadResourceResult["contents"]) =>
  contents.reduce((sum, c) => sum + ("text" in c ? c.text.length : "blob" in c ? c.blob.length : 0), 0);

/**
 * A result's links to the server's own resources (not web addresses), read and put in
 * the result as embedded resources: the person gets them as files in the thread, the
 * model reads the text ones. A link that cannot be read stays a link the model can name,
 * and so does one that would take the resources of the result past `budget` (bytes, as
 * sent): the result itself was bounded by that, its links would otherwise add five times
 * as much (and over HTTP, no transport bounds them).
 */
async function withLinkedResources(
  result: CallToolResult,
  connection: ServerConnection,
  budget: number,
  signal?: AbortSignal,
): Promise<CallToolResult> {
  const readable = (block: CallToolResult["content"][number]) =>
    block.type === "resource_link" && !/^https?:/i.test(block.uri);
  if (!result.content.some(readable)) return result;
  let read = 0;
  let left = budget;
  const content = await Promise.all(
    result.content.map(async (block) => {
      if (!readable(block) || block.type !== "resource_link" || read++ >= LINKS_READ) return [block];
      if (block.size !== undefined && block.size > left) return [block];
      try {
        const { contents } = await connection.readResource(block.uri, signal);
        const size = sizeOf(contents);
        if (contents.length === 0 || size > left) return [block];
        left -= size;
        return contents.map((resource) => ({ type: "resource" as const, resource }));
      } catch (err) {
        log.debug({ err, server: connection.name, uri: block.uri }, "a linked resource could not be read");
        return [block];
      }
    }),
  );
  return { ...result, content: content.flat() };
}
