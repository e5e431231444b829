import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { extensionFor, toModelResult } from "./results.js";

const opts = { maxChars: 1000, server: "files", tool: "read" };
const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]).toString("base64");

describe("toModelResult", () => {
  it("joins text blocks for the model", () => {
    const r = toModelResult(
      {
        content: [
          { type: "text", text: "one" },
          { type: "text", text: "two" },
        ],
      },
      opts,
    );
    expect(r).toEqual({ ok: true, text: "one\ntwo", artifacts: [] });
  });

  it("turns images and audio into files named after server, tool and position, and tells the model", () => {
    const r = toModelResult(
      {
        content: [
          { type: "image", data: png, mimeType: "image/png" },
          { type: "audio", data: png, mimeType: "audio/mpeg" },
        ],
      },
      opts,
    );
    expect(r.artifacts.map((a) => [a.filename, a.mimeType, a.bytes.byteLength])).toEqual([
      ["files-read-1.png", "image/png", 7],
      ["files-read-2.mp3", "audio/mpeg", 7],
    ]);
    expect([...(r.artifacts[0]?.bytes ?? [])].slice(0, 4)).toEqual([0x89, 0x50, 0x4e, 0x47]);
    expect(r.text).toBe(
      "[Attached file: files-read-1.png (image/png, 7 B)]\n[Attached file: files-read-2.mp3 (audio/mpeg, 7 B)]",
    );
    expect(r.text).not.toContain(png);
  });

  it("attaches embedded blob resources and reads embedded text resources with their uri", () => {
    const r = toModelResult(
      {
        content: [
          {
            type: "resource",
            resource: { uri: "file:///r/report.pdf", mimeType: "application/pdf", blob: png },
          },
          {
            type: "resource",
            resource: { uri: "file:///r/notes.md", mimeType: "text/markdown", text: "# Notes" },
          },
        ],
      },
      opts,
    );
    expect(r.artifacts).toHaveLength(1);
    expect(r.artifacts[0]).toMatchObject({ title: "report.pdf", filename: "files-read-1.pdf" });
    expect(r.text).toContain("[Resource file:///r/notes.md (text/markdown)]\n# Notes");
  });

  it("keeps resource links as a line with name, uri and description", () => {
    const r = toModelResult(
      {
        content: [
          { type: "resource_link", name: "Spec", uri: "https://x.example/spec", description: "The spec" },
        ],
      },
      opts,
    );
    expect(r.text).toBe("[Resource link: Spec <https://x.example/spec>: The spec]");
  });

  it("passes structured content as JSON when there is no text", () => {
    const r = toModelResult({ content: [], structuredContent: { temperature: 21, unit: "C" } }, opts);
    expect(r.text).toBe('{"temperature":21,"unit":"C"}');
  });

  it("prefers the text over structured content when both are present", () => {
    const r = toModelResult(
      { content: [{ type: "text", text: "21 C" }], structuredContent: { t: 21 } },
      opts,
    );
    expect(r.text).toBe("21 C");
  });

  it("marks an error result as not ok and keeps the server's words", () => {
    const r = toModelResult({ content: [{ type: "text", text: "no such repo" }], isError: true }, opts);
    expect(r).toMatchObject({ ok: false, text: "no such repo" });
    expect(toModelResult({ content: [], isError: true }, opts).text).toContain("error without details");
  });

  it("caps the text and says how much was left out, keeping the attachment notes", () => {
    const result: CallToolResult = {
      content: [
        { type: "text", text: "a".repeat(50) },
        { type: "image", data: png, mimeType: "image/png" },
      ],
    };
    const r = toModelResult(result, { ...opts, maxChars: 20 });
    const note = "[Attached file: files-read-1.png (image/png, 7 B)]";
    expect(r.text).toBe(
      `${"a".repeat(20)}\n[... ${51 + note.length - 20} more characters truncated]\n${note}`,
    );
  });

  it("never cuts an emoji in half", () => {
    const r = toModelResult(
      { content: [{ type: "text", text: `ab${"😀".repeat(5)}` }] },
      { ...opts, maxChars: 3 },
    );
    expect(r.text.startsWith("ab\n[...")).toBe(true);
  });

  it("picks file extensions from mime types, with a fallback", () => {
    expect(extensionFor("image/jpeg")).toBe("jpg");
    expect(extensionFor("image/svg+xml")).toBe("svg");
    expect(extensionFor("text/plain; charset=utf-8")).toBe("txt");
    expect(extensionFor("application/x-tar")).toBe("tar");
    expect(extensionFor("application/vnd.openxmlformats-officedocument.wordprocessingml.document")).toBe(
      "bin",
    );
  });
});
