import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { log } from "../log.js";
import { McpHub } from "./hub.js";
import { EVERYTHING, FILESYSTEM, isAlive, stdio } from "./testkit.js";
import type { ToolProgress } from "./types.js";

const options = {
  callTimeoutMs: 20_000,
  connectTimeoutMs: 20_000,
  maxOutputChars: 10_000,
  blockedServers: ["blocked"],
  maxRestarts: 3,
};

describe("McpHub with the reference servers", () => {
  const folder = mkdtempSync(join(tmpdir(), "switchboard-fs-"));
  let hub: McpHub;

  beforeAll(async () => {
    hub = await McpHub.start(
      [
        // A short per-server timeout: the progress and timeout cases below rely on it.
        stdio("everything", [EVERYTHING], { timeoutMs: 1_500, disabledTools: ["toggle-simulated-logging"] }),
        stdio("fs", [FILESYSTEM, folder], {
          enabledTools: ["write_file", "read_text_file", "read_media_file", "list_directory"],
        }),
        { ...stdio("missing", []), command: "switchboard-no-such-command" },
        stdio("quits", ["-e", "console.error('missing API key'); process.exit(3)"]),
        stdio("blocked", [EVERYTHING]),
        stdio("off", [EVERYTHING], { disabled: true }),
      ],
      options,
    );
  });

  afterAll(async () => {
    await hub?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it("lists the prompts of the servers that offer them, with their arguments", () => {
    const prompts = hub.prompts();
    expect(prompts.every((p) => p.server === "everything")).toBe(true);
    expect(prompts.find((p) => p.name === "args-prompt")).toEqual({
      server: "everything",
      name: "args-prompt",
      description: "A prompt with two arguments, one required and one optional",
      arguments: [
        { name: "city", description: "Name of the city", required: true },
        // The server's schema marks it optional, which drops its description from the listing.
        { name: "state", required: false },
      ],
    });
  });

  it("gets a prompt's text with its arguments, and says why when the server refuses", async () => {
    expect(await hub.getPrompt("everything", "args-prompt", { city: "Paris" })).toBe(
      "What's weather in Paris?",
    );
    await expect(hub.getPrompt("everything", "no-such-prompt", {})).rejects.toMatchObject({
      userMessage: expect.stringMatching(
        /^The prompt no-such-prompt from everything did not work: .+\. Check its arguments with \/prompts\.$/,
      ),
    });
    await expect(hub.getPrompt("nowhere", "args-prompt", {})).rejects.toThrow(
      'There is no tool server named "nowhere".',
    );
  });

  it("connects the working servers in parallel while broken ones fail with a reason", () => {
    const byName = Object.fromEntries(hub.status().map((s) => [s.name, s]));
    expect(Object.keys(byName)).toEqual(["everything", "fs", "missing", "quits", "blocked"]);
    expect(byName.everything).toMatchObject({ state: "connected", transport: "stdio" });
    expect(byName.everything?.pid).toBeTypeOf("number");
    expect(byName.fs).toMatchObject({ state: "connected", toolCount: 4 });
    expect(byName.missing).toMatchObject({ state: "failed", toolCount: 0 });
    expect(byName.missing?.error).toContain("command not found");
    expect(byName.quits).toMatchObject({ state: "failed" });
    expect(byName.quits?.error).toContain("exited during start-up");
    expect(byName.quits?.error).toContain("missing API key");
    expect(byName.blocked).toMatchObject({ state: "blocked", toolCount: 0 });
  });

  it("lists tools with provider-safe names, applying enabledTools and disabledTools", () => {
    const names = hub.tools().map((t) => t.name);
    expect(names).toContain("everything__echo");
    expect(names).toContain("everything__get-sum");
    expect(names).not.toContain("everything__toggle-simulated-logging");
    expect(
      hub
        .tools(["fs"])
        .map((t) => t.name)
        .sort(),
    ).toEqual(["fs__list_directory", "fs__read_media_file", "fs__read_text_file", "fs__write_file"]);
    expect(names.some((n) => n.startsWith("blocked__") || n.startsWith("off__"))).toBe(false);
    for (const entry of hub.tools()) {
      expect(entry.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
      expect(entry.inputSchema.type).toBe("object");
      expect(entry.inputSchema).not.toHaveProperty("$schema");
    }
  });

  it("leaves out tools that can only run as tasks", () => {
    expect(hub.tools(["everything"]).map((t) => t.tool)).not.toContain("simulate-research-query");
  });

  it("echoes through the everything server", async () => {
    const out = await hub.call("everything__echo", { message: "hello" });
    expect(out).toMatchObject({
      ok: true,
      text: "Echo: hello",
      server: "everything",
      tool: "echo",
      artifacts: [],
    });
    expect(out.ms).toBeGreaterThanOrEqual(0);
  });

  it("adds two numbers with get-sum", async () => {
    const out = await hub.call("everything__get-sum", { a: 2, b: 40 });
    expect(out.ok).toBe(true);
    expect(out.text).toContain("42");
  });

  it("returns a correctable error for bad arguments without calling the server", async () => {
    const out = await hub.call("everything__get-sum", { a: "two" });
    expect(out.ok).toBe(false);
    expect(out.text).toContain('"a" must be number, got string');
    expect(out.text).toContain('missing required argument "b"');
  });

  it("answers an unknown tool name with the names that exist", async () => {
    const out = await hub.call("everything__nope", {});
    expect(out.ok).toBe(false);
    expect(out.text).toContain('There is no tool named "everything__nope"; available:');
    expect(out.text).toContain("everything__echo");
  });

  it("turns the tiny image into a PNG artifact and tells the model about it", async () => {
    const out = await hub.call("everything__get-tiny-image", {});
    expect(out.ok).toBe(true);
    const [image] = out.artifacts;
    expect(image).toMatchObject({ filename: "everything-get-tiny-image-1.png", mimeType: "image/png" });
    expect([...(image?.bytes.slice(0, 8) ?? [])]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    expect(out.text).toMatch(/\[Attached file: everything-get-tiny-image-1\.png \(image\/png, [\d.]+ KB\)\]/);
  });

  it("reads the server's resources a result links to and attaches them, the text ones also for the model", async () => {
    const out = await hub.call("everything__get-resource-links", { count: 2 });
    expect(out.artifacts.map((a) => a.filename)).toEqual([
      "everything-get-resource-links-1.txt",
      "everything-get-resource-links-2.txt",
    ]);
    expect(Buffer.from(out.artifacts[1]?.bytes ?? []).toString()).toContain("Resource 2");
    expect(out.text).toContain("[Resource demo://resource/dynamic/text/2 (text/plain)]");
  });

  it("attaches an embedded blob resource as a file", async () => {
    const out = await hub.call("everything__get-resource-reference", { resourceType: "Blob", resourceId: 2 });
    expect(out.artifacts).toHaveLength(1);
    expect(Buffer.from(out.artifacts[0]?.bytes ?? []).toString()).toContain("Resource 2");
  });

  it("returns the weather of the structured-content tool", async () => {
    const out = await hub.call("everything__get-structured-content", { location: "Chicago" });
    expect(out.ok).toBe(true);
    expect(JSON.parse(out.text)).toHaveProperty("temperature");
  });

  it("keeps a long operation alive while it reports progress, past the per-call timeout", async () => {
    const progress: ToolProgress[] = [];
    // 3 s in total, a progress note every 0.25 s, against a 1.5 s timeout.
    const out = await hub.call(
      "everything__trigger-long-running-operation",
      { duration: 3, steps: 12 },
      { onProgress: (p) => progress.push(p) },
    );
    expect(out.ok).toBe(true);
    expect(out.text).toContain("Long running operation completed");
    // The SDK handles the last notification after the answer that follows it, so it may be missed.
    expect(progress.length).toBeGreaterThanOrEqual(11);
    expect(progress.map((p) => p.progress)).toEqual(progress.map((_, i) => i + 1));
    expect(progress[0]?.total).toBe(12);
  });

  it("gives up on a silent operation at the timeout", async () => {
    const out = await hub.call("everything__trigger-long-running-operation", { duration: 4, steps: 1 });
    expect(out.ok).toBe(false);
    expect(out.text).toContain("did not answer within 1.5 s");
  });

  it("stops waiting when the caller cancels", async () => {
    const controller = new AbortController();
    const pending = hub.call(
      "everything__trigger-long-running-operation",
      { duration: 4, steps: 1 },
      {
        signal: controller.signal,
      },
    );
    setTimeout(() => controller.abort(), 100);
    const out = await pending;
    expect(out.ok).toBe(false);
    expect(out.text).toContain("cancelled");
  });

  it("works with files in the allowed folder through server-filesystem", async () => {
    const path = join(folder, "note.txt");
    const written = await hub.call("fs__write_file", { path, content: "from the hub" });
    expect(written.ok).toBe(true);
    expect(readFileSync(path, "utf8")).toBe("from the hub");
    const read = await hub.call("fs__read_text_file", { path });
    expect(read.text).toContain("from the hub");
    const outside = await hub.call("fs__read_text_file", { path: "/etc/hostname" });
    expect(outside.ok).toBe(false);
  });

  it("gives an image read through server-filesystem to the thread as a file, and the model only a line about it", async () => {
    const bytes = Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      randomBytes(60_000),
    ]);
    const path = join(folder, "chart.png");
    writeFileSync(path, bytes);
    const read = await hub.call("fs__read_media_file", { path });
    expect(read.ok).toBe(true);
    // The server repeats its image block as structured content: its base64 is not for the model.
    expect(read.text).toBe("[Attached file: fs-read_media_file-1.png (image/png, 58.6 KB)]");
    expect(read.artifacts).toHaveLength(1);
    expect(Buffer.from(read.artifacts[0]?.bytes ?? []).equals(bytes)).toBe(true);
  });

  it("caps long output and says so", async () => {
    const small = await McpHub.start([stdio("everything", [EVERYTHING], { enabledTools: ["echo"] })], {
      ...options,
      maxOutputChars: 10,
    });
    try {
      const out = await small.call("everything__echo", { message: "x".repeat(100) });
      expect(out.text).toBe("Echo: xxxx\n[... 96 more characters truncated]");
    } finally {
      await small.close();
    }
  });

  it("warns at connect of a tool filter that names no tool, and shows it in the server's status", async () => {
    const warn = vi.spyOn(log, "warn");
    const filtered = await McpHub.start(
      [stdio("everything", [EVERYTHING], { disabledTools: ["everything__echo", "get-sum"] })],
      options,
    );
    try {
      const said =
        'disabledTools names "everything__echo", which is not a tool of this server, so it disables nothing: name the tool as the server lists it, without the "everything__" that the model sees ("echo").';
      expect(filtered.status()[0]?.warnings).toEqual([said]);
      expect(filtered.tools().map((t) => t.name)).toContain("everything__echo");
      expect(warn).toHaveBeenCalledWith(
        { server: "everything", problems: [said] },
        "mcp.json's tool filters for this server name tools it does not list",
      );
    } finally {
      warn.mockRestore();
      await filtered.close();
    }
  });

  it("leaves no child process behind after close", async () => {
    const other = await McpHub.start([stdio("a", [EVERYTHING]), stdio("b", [FILESYSTEM, folder])], options);
    const pids = other.status().map((s) => s.pid);
    expect(pids.every((p) => typeof p === "number" && isAlive(p))).toBe(true);
    await other.close();
    for (const pid of pids) expect(isAlive(pid ?? 0)).toBe(false);
    expect(other.status().map((s) => s.state)).toEqual(["failed", "failed"]);
    expect((await other.call("a__echo", { message: "late" })).ok).toBe(false);
  });
});
