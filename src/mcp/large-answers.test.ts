import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { McpHub } from "./hub.js";
import { FILESYSTEM, SDK_ESM, stdio } from "./testkit.js";

const options = {
  callTimeoutMs: 30_000,
  connectTimeoutMs: 20_000,
  maxOutputChars: 10_000,
  blockedServers: [],
  maxRestarts: 3,
};

/**
 * A tool that links three resources of 0.8 MB each and one that says it is a terabyte;
 * `reads` says which were read.
 */
const LINKING_SERVER = `
import { Server } from "${SDK_ESM}/server/index.js";
import { StdioServerTransport } from "${SDK_ESM}/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema, ReadResourceRequestSchema } from "${SDK_ESM}/types.js";
const reads = [];
const server = new Server({ name: "links", version: "1" }, { capabilities: { tools: {}, resources: {} } });
server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: ["links", "reads"].map((name) => ({ name, inputSchema: { type: "object" } })),
}));
server.setRequestHandler(CallToolRequestSchema, (req) => ({
  content: req.params.name === "reads"
    ? [{ type: "text", text: reads.join(" ") }]
    : [
        ...[1, 2, 3].map((n) => ({ type: "resource_link", uri: "test://part/" + n, name: "part " + n })),
        { type: "resource_link", uri: "test://huge", name: "huge", size: 1e12 },
      ],
}));
server.setRequestHandler(ReadResourceRequestSchema, (req) => {
  reads.push(req.params.uri);
  return { contents: [{ uri: req.params.uri, mimeType: "text/plain", text: "y".repeat(800_000) }] };
});
await server.connect(new StdioServerTransport());
`;

/** Answers a call with 3 MB whose id neither end of the message shows, and never again. */
const ODD_SERVER = `
import { Server } from "${SDK_ESM}/server/index.js";
import { StdioServerTransport } from "${SDK_ESM}/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "${SDK_ESM}/types.js";
const server = new Server({ name: "odd", version: "1" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [{ name: "odd", inputSchema: { type: "object" } }] }));
server.setRequestHandler(CallToolRequestSchema, (req, extra) => {
  const text = "z".repeat(3_000_000);
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", result: { content: [{ type: "text", text }] }, id: extra.requestId, x: 1 }) + "\\n");
  return new Promise(() => {});
});
await server.connect(new StdioServerTransport());
`;

describe("answers of several megabytes over stdio", () => {
  const folder = mkdtempSync(join(tmpdir(), "switchboard-large-"));
  let hub: McpHub;
  // The bot reads this one's answers up to 1 MB.
  let tight: McpHub;

  beforeAll(async () => {
    // Random bytes do not compress: as base64, sent twice (content and structuredContent),
    // this photo is an 11 MB line, over the SDK's own 10 MiB limit.
    writeFileSync(join(folder, "photo.png"), randomBytes(4_200_000));
    writeFileSync(join(folder, "small.txt"), "still here");
    writeFileSync(join(folder, "big.txt"), "x".repeat(2_500_000));
    writeFileSync(join(folder, "links.mjs"), LINKING_SERVER);
    writeFileSync(join(folder, "odd.mjs"), ODD_SERVER);
    [hub, tight] = await Promise.all([
      McpHub.start([stdio("fs", [FILESYSTEM, folder])], options),
      McpHub.start(
        [
          stdio("tight", [FILESYSTEM, folder]),
          stdio("links", [join(folder, "links.mjs")]),
          stdio("odd", [join(folder, "odd.mjs")]),
        ],
        {
          ...options,
          maxAnswerMb: 2,
        },
      ),
    ]);
  });

  afterAll(async () => {
    await Promise.all([hub?.close(), tight?.close()]);
    rmSync(folder, { recursive: true, force: true });
  });

  const pidOf = (of: McpHub, name: string) => of.status().find((s) => s.name === name)?.pid;
  const statusOf = (of: McpHub, name: string) => of.status().find((s) => s.name === name);

  it("reads a 4.2 MB photo, and the server stays connected", async () => {
    const pid = pidOf(hub, "fs");
    const out = await hub.call("fs__read_media_file", { path: join(folder, "photo.png") });
    expect(out.ok, out.text).toBe(true);
    expect(out.artifacts).toHaveLength(1);
    expect(out.artifacts[0]?.bytes.length).toBe(4_200_000);
    expect(statusOf(hub, "fs")).toMatchObject({ state: "connected", pid });
  });

  it("fails only the call whose answer is over the limit, with a sentence, and keeps the server", async () => {
    const pid = pidOf(tight, "tight");
    expect(pid).toBeDefined();
    const [big, small] = await Promise.all([
      tight.call("tight__read_text_file", { path: join(folder, "big.txt") }),
      tight.call("tight__read_text_file", { path: join(folder, "small.txt") }),
    ]);
    expect(big.ok).toBe(false);
    expect(big.text).toMatch(/larger than 2 MB/);
    expect(big.text).toMatch(/ask for less/i);
    expect(big.text).not.toMatch(/restart/i);
    expect(small).toMatchObject({ ok: true, text: "still here" });
    const after = await tight.call("tight__read_text_file", { path: join(folder, "small.txt") });
    expect(after).toMatchObject({ ok: true, text: "still here" });
    expect(statusOf(tight, "tight")).toMatchObject({ state: "connected", pid });
  });

  it("attaches a result's linked resources up to the same limit in all, and leaves the rest as links", async () => {
    const out = await tight.call("links__links", {});
    expect(out.ok, out.text).toBe(true);
    // Two of 0.8 MB fit in 2 MB: the third is read, and left a link.
    expect(out.artifacts).toHaveLength(2);
    const reads = await tight.call("links__reads", {});
    // The terabyte one, by its own account, is never read.
    expect(reads.text.split(" ").sort()).toEqual(["test://part/1", "test://part/2", "test://part/3"]);
  });

  it("ends the calls in flight with the same sentence when it cannot tell which call an answer over the limit was for", async () => {
    expect(statusOf(tight, "odd")).toMatchObject({ state: "connected" });
    const started = Date.now();
    const out = await tight.call("odd__odd", {});
    expect(Date.now() - started).toBeLessThan(options.callTimeoutMs);
    expect(out).toMatchObject({ ok: false, text: expect.stringMatching(/larger than 2 MB.*Ask for less/) });
    expect(statusOf(tight, "odd")?.state).toBe("connected");
  });
});
