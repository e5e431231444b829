/**
 * Real MCP servers for the hub's tests and bench: the reference servers installed as
 * devDependencies, and a small scripted server for what they do not do (pagination,
 * list_changed on demand, awkward names, `$ref` schemas, crash-on-restart).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { StdioServerConfig } from "./servers.js";

const modules = resolve(fileURLToPath(new URL(".", import.meta.url)), "../../node_modules");
export const EVERYTHING = join(modules, "@modelcontextprotocol/server-everything/dist/index.js");
export const FILESYSTEM = join(modules, "@modelcontextprotocol/server-filesystem/dist/index.js");
export const MEMORY = join(modules, "@modelcontextprotocol/server-memory/dist/index.js");

export function stdio(
  name: string,
  args: string[],
  extra: Partial<StdioServerConfig> = {},
): StdioServerConfig {
  return { name, transport: "stdio", command: process.execPath, args, env: {}, disabled: false, ...extra };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

/** server-everything in streamable HTTP mode on a free port; resolves when it listens. */
export async function startEverythingHttp(port?: number): Promise<{ child: ChildProcess; url: string }> {
  const chosen = port ?? (await freePort());
  const child = spawn(process.execPath, [EVERYTHING, "streamableHttp"], {
    env: { PATH: process.env.PATH ?? "", PORT: String(chosen) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  await new Promise<void>((done, fail) => {
    let seen = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes("listening on port")) done();
    });
    child.once("exit", (code) => fail(new Error(`server-everything exited (${code}): ${seen}`)));
  });
  return { child, url: `http://127.0.0.1:${chosen}/mcp` };
}

export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    child.once("exit", () => done());
    child.kill("SIGKILL");
  });
}

/** The SDK's ESM build as a file URL, for scripted servers to import from. */
export const SDK_ESM = pathToFileURL(join(modules, "@modelcontextprotocol/sdk/dist/esm")).href;
const sdk = (path: string) => `${SDK_ESM}/${path}`;

/**
 * A scripted stdio server. Tools: `alpha` ($ref schema, counts its calls), `beta.tool`
 * and `beta_tool` (collide once sanitised), an 80-character name, `only-task` (task
 * required), `calls` (the count), `add-tool` (adds `gamma`, sends list_changed). It
 * pages `tools/list` two at a time. With FAIL_IF_EXISTS=<file> it refuses to start
 * when that file exists, and creates it when it does start. With UNDECLARED_LIST_CHANGED=1
 * it does not declare `tools.listChanged`, though `add-tool` still sends the notification.
 */
const SCRIPT = `
import { existsSync, writeFileSync } from "node:fs";
import { Server } from "${sdk("server/index.js")}";
import { StdioServerTransport } from "${sdk("server/stdio.js")}";
import { CallToolRequestSchema, ListToolsRequestSchema } from "${sdk("types.js")}";

const marker = process.env.FAIL_IF_EXISTS;
if (marker && existsSync(marker)) { console.error("refusing to start: " + marker + " exists"); process.exit(2); }
if (marker) writeFileSync(marker, "started");

const obj = (properties = {}, extra = {}) => ({ type: "object", properties, ...extra });
const tools = [
  { name: "alpha", description: "Takes an item", inputSchema: obj({ item: { $ref: "#/$defs/Item" } }, {
    required: ["item"],
    $defs: { Item: obj({ id: { type: "integer" }, child: { $ref: "#/$defs/Item" } }, { required: ["id"] }) },
  }) },
  { name: "beta.tool", inputSchema: obj() },
  { name: "beta_tool", inputSchema: obj() },
  { name: "${"x".repeat(80)}", inputSchema: obj() },
  { name: "only-task", inputSchema: obj(), execution: { taskSupport: "required" } },
  { name: "calls", inputSchema: obj() },
  { name: "add-tool", inputSchema: obj() },
];
let calls = 0;
// As FastMCP by default: it sends tools/list_changed without declaring that it does.
const tools_ = process.env.UNDECLARED_LIST_CHANGED ? {} : { listChanged: true };
const server = new Server({ name: "scripted", version: "1.0.0" }, { capabilities: { tools: tools_ } });
server.setRequestHandler(ListToolsRequestSchema, (req) => {
  const start = Number(req.params?.cursor ?? 0);
  const next = start + 2 < tools.length ? String(start + 2) : undefined;
  return { tools: tools.slice(start, start + 2), ...(next && { nextCursor: next }) };
});
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const { name, arguments: args } = req.params;
  if (name === "calls") return { content: [{ type: "text", text: String(calls) }] };
  calls++;
  if (name === "add-tool") {
    tools.push({ name: "gamma", description: "Added later", inputSchema: obj() });
    await server.sendToolListChanged();
  }
  return { content: [{ type: "text", text: name + " " + JSON.stringify(args ?? {}) }] };
});
await server.connect(new StdioServerTransport());
`;

/** Writes the scripted server into `dir` (the caller's temp folder) and returns its path. */
export function scriptedServerFile(dir: string): string {
  const file = join(dir, "scripted-server.mjs");
  writeFileSync(file, SCRIPT);
  return file;
}

/**
 * Ten made-up services of twenty tools each (five objects × list/get/create/delete), for
 * the large-catalog tests and bench: 200 tools whose names overlap the way real catalogs do.
 */
export const CATALOG_DOMAINS: Record<string, { about: string; objects: string[] }> = {
  github: {
    about: "GitHub code hosting",
    objects: ["issue", "pull_request", "repository", "branch", "release"],
  },
  calendar: {
    about: "the team calendar",
    objects: ["event", "meeting_room", "reminder", "attendee", "availability"],
  },
  billing: { about: "Stripe billing", objects: ["invoice", "payment", "subscription", "refund", "customer"] },
  crm: { about: "the sales CRM", objects: ["contact", "deal", "lead", "company", "note"] },
  weather: {
    about: "weather data for any city",
    objects: ["forecast", "weather_alert", "observation", "air_quality_report", "weather_station"],
  },
  storage: {
    about: "cloud file storage",
    objects: ["file", "folder", "share_link", "file_version", "trash_item"],
  },
  chat: { about: "team chat", objects: ["message", "channel", "thread", "reaction", "user_group"] },
  maps: {
    about: "maps and directions",
    objects: ["route", "place", "geocode", "traffic_report", "map_tile"],
  },
  tickets: {
    about: "the incident and ticket desk",
    objects: ["ticket", "incident", "on_call_schedule", "escalation", "sla_policy"],
  },
  music: {
    about: "the music streaming service",
    objects: ["playlist", "track", "album", "artist", "listening_history"],
  },
};

const CATALOG_SCRIPT = `
import { Server } from "${sdk("server/index.js")}";
import { StdioServerTransport } from "${sdk("server/stdio.js")}";
import { CallToolRequestSchema, ListToolsRequestSchema } from "${sdk("types.js")}";

const domain = process.env.CATALOG_DOMAIN;
const spec = JSON.parse(process.env.CATALOG_SPEC);
const words = (o) => o.replace(/_/g, " ");
const verbs = {
  list: (o) => "List the " + words(o) + "s in " + spec.about + ", newest first, with a filter.",
  get: (o) => "Get one " + words(o) + " from " + spec.about + " by its id, with all its details.",
  create: (o) => "Create a new " + words(o) + " in " + spec.about + ".",
  delete: (o) => "Delete a " + words(o) + " from " + spec.about + " for good.",
};
const tools = spec.objects.flatMap((o) => Object.entries(verbs).map(([verb, text]) => ({
  name: verb + "_" + o,
  description: text(o),
  inputSchema: { type: "object", properties: verb === "list"
    ? { filter: { type: "string", description: "Words the " + words(o) + " must contain" }, limit: { type: "integer" } }
    : { [o + "_id"]: { type: "string", description: "The " + words(o) + "'s id" }, details: { type: "string" } } },
  annotations: verb === "delete" ? { destructiveHint: true } : { readOnlyHint: verb !== "create" },
})));
const server = new Server({ name: domain, version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, (req) => ({
  content: [{ type: "text", text: domain + "/" + req.params.name + " ran with " + JSON.stringify(req.params.arguments ?? {}) }],
}));
await server.connect(new StdioServerTransport());
`;

/** The `mcpServers` of mcp.json for the ten catalog servers, written into `dir`. */
export function catalogServers(dir: string): Record<string, unknown> {
  const file = join(dir, "catalog-server.mjs");
  writeFileSync(file, CATALOG_SCRIPT);
  return Object.fromEntries(
    Object.entries(CATALOG_DOMAINS).map(([domain, spec]) => [
      domain,
      {
        command: process.execPath,
        args: [file],
        env: { CATALOG_DOMAIN: domain, CATALOG_SPEC: JSON.stringify(spec) },
      },
    ]),
  );
}
