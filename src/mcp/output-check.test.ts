import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { log } from "../log.js";
import { McpHub } from "./hub.js";
import { stdio } from "./testkit.js";

const sdk = (path: string) =>
  pathToFileURL(join(import.meta.dirname, "../../node_modules/@modelcontextprotocol/sdk/dist/esm", path))
    .href;

/**
 * Tools that declare an outputSchema and answer outside it, as a Python FastMCP server
 * does with a naive datetime: `when` gives a date-time without an offset, `bare` gives no
 * structured content at all.
 */
const SCRIPT = `
import { Server } from "${sdk("server/index.js")}";
import { StdioServerTransport } from "${sdk("server/stdio.js")}";
import { CallToolRequestSchema, ListToolsRequestSchema } from "${sdk("types.js")}";

const outputSchema = { type: "object", properties: { at: { type: "string", format: "date-time" } }, required: ["at"] };
const tools = [
  { name: "when", inputSchema: { type: "object" }, outputSchema },
  { name: "bare", inputSchema: { type: "object" }, outputSchema },
];
const server = new Server({ name: "naive", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, (req) => {
  const content = [{ type: "text", text: "booked for 2024-01-01T10:00:00" }];
  return req.params.name === "when" ? { content, structuredContent: { at: "2024-01-01T10:00:00" } } : { content };
});
await server.connect(new StdioServerTransport());
`;

const dir = mkdtempSync(join(tmpdir(), "switchboard-output-"));
const file = join(dir, "naive-server.mjs");
let hub: McpHub;

beforeAll(async () => {
  writeFileSync(file, SCRIPT);
  hub = await McpHub.start([stdio("naive", [file])], {
    callTimeoutMs: 10_000,
    connectTimeoutMs: 10_000,
    maxOutputChars: 10_000,
    blockedServers: [],
    maxRestarts: 1,
  });
});
afterEach(() => vi.restoreAllMocks());
afterAll(async () => {
  await hub.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("a tool whose result does not match its own outputSchema", () => {
  it("is answered with its content, and the mismatch is logged once for the tool", async () => {
    const warn = vi.spyOn(log, "warn").mockReturnValue(undefined);
    const first = await hub.call("naive__when", {});
    expect(first).toMatchObject({ ok: true });
    expect(first.text).toContain("booked for 2024-01-01T10:00:00");
    expect((await hub.call("naive__when", {})).ok).toBe(true);
    const told = warn.mock.calls.filter(([, message]) => String(message).includes("output schema"));
    expect(told).toHaveLength(1);
    expect(told[0]?.[0]).toMatchObject({ server: "naive", tool: "when" });
  });

  it("is answered with its content when it gives no structured content", async () => {
    vi.spyOn(log, "warn").mockReturnValue(undefined);
    const out = await hub.call("naive__bare", {});
    expect(out).toMatchObject({ ok: true, text: "booked for 2024-01-01T10:00:00" });
  });
});
