import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { McpHub } from "./hub.js";
import { SDK_ESM, stdio } from "./testkit.js";

/**
 * Tools as servers in the wild list them, two a page: one good, some the spec does not
 * allow but that can be called all the same, and two that cannot be.
 */
const MALFORMED_SERVER = `
import { Server } from "${SDK_ESM}/server/index.js";
import { StdioServerTransport } from "${SDK_ESM}/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "${SDK_ESM}/types.js";
const tools = [
  { name: "good", inputSchema: { type: "object", properties: { q: { type: "string" } } } },
  { name: "untyped", inputSchema: { properties: { q: { type: "string" } } } },
  { name: "empty", inputSchema: {} },
  { name: "none" },
  { name: "bad-ref", inputSchema: { type: "object" },
    outputSchema: { type: "object", properties: { a: { $ref: "#/definitions/Missing" } } } },
  { name: "array-out", inputSchema: { type: "object" }, outputSchema: { type: "array" } },
  { name: "loose-props", inputSchema: { type: "object", properties: { anything: true } } },
  { name: "odd-hints", inputSchema: { type: "object" }, annotations: { readOnlyHint: "yes" } },
  { name: "stringly", inputSchema: { type: "string" } },
  { description: "has no name", inputSchema: { type: "object" } },
];
const server = new Server({ name: "malformed", version: "1" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, (req) => {
  const start = Number(req.params?.cursor ?? 0);
  const next = start + 2 < tools.length ? String(start + 2) : undefined;
  return { tools: tools.slice(start, start + 2), ...(next && { nextCursor: next }) };
});
server.setRequestHandler(CallToolRequestSchema, (req) => ({
  content: [{ type: "text", text: req.params.name + " ran" }],
}));
await server.connect(new StdioServerTransport());
`;

describe("a server that lists malformed tools", () => {
  const folder = mkdtempSync(join(tmpdir(), "switchboard-malformed-"));
  let hub: McpHub;

  beforeAll(async () => {
    writeFileSync(join(folder, "malformed.mjs"), MALFORMED_SERVER);
    hub = await McpHub.start([stdio("m", [join(folder, "malformed.mjs")])], {
      callTimeoutMs: 10_000,
      connectTimeoutMs: 10_000,
      maxOutputChars: 10_000,
      blockedServers: [],
      maxRestarts: 3,
    });
  });

  afterAll(async () => {
    await hub?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it("connects, and offers every tool of every page that can be called", () => {
    expect(hub.status()[0]?.state).toBe("connected");
    expect(hub.tools().map((t) => t.tool)).toEqual([
      "good",
      "untyped",
      "empty",
      "none",
      "bad-ref",
      "array-out",
      "loose-props",
      "odd-hints",
    ]);
  });

  it("gives a tool without an object schema one that takes no arguments", () => {
    const schemaOf = (tool: string) => hub.tools().find((t) => t.tool === tool)?.inputSchema;
    expect(schemaOf("none")).toMatchObject({ type: "object", properties: {} });
    expect(schemaOf("empty")).toMatchObject({ type: "object" });
    expect(schemaOf("untyped")).toMatchObject({ type: "object", properties: { q: { type: "string" } } });
  });

  it("calls a tool it had to mend", async () => {
    expect(await hub.call("m__none", {})).toMatchObject({ ok: true, text: "none ran" });
    expect(await hub.call("m__bad-ref", {})).toMatchObject({ ok: true, text: "bad-ref ran" });
    expect(await hub.call("m__untyped", { q: "x" })).toMatchObject({ ok: true, text: "untyped ran" });
  });

  it("names the tools it left out, and why, in the server's warnings", () => {
    const warnings = hub.status()[0]?.warnings?.join("\n") ?? "";
    expect(warnings).toMatch(/stringly/);
    expect(warnings).toMatch(/without a name/);
    expect(warnings).not.toMatch(/\bgood\b/);
  });
});
