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
    // Both reach the thread as files; the model reads the text one.
    expect(r.artifacts).toHaveLength(2);
    expect(r.artifacts[0]).toMatchObject({ title: "report.pdf", filename: "files-read-1.pdf" });
    expect(r.artifacts[1]).toMatchObject({ title: "notes.md", mimeType: "text/markdown" });
    expect(Buffer.from(r.artifacts[1]!.bytes).toString("utf8")).toBe("# Notes");
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

  it("shows structured content without text as a table, or as a JSON code block when it is not flat", () => {
    const one = toModelResult({ content: [], structuredContent: { temperature: 21, unit: "C" } }, opts);
    expect(one.text).toBe("| field | value |\n| --- | --- |\n| temperature | 21 |\n| unit | C |");
    const many = toModelResult(
      {
        content: [],
        structuredContent: [
          { name: "a|b", n: 1 },
          { name: "c", extra: true },
        ] as never,
      },
      opts,
    );
    expect(many.text).toBe("| name | n | extra |\n| --- | --- | --- |\n| a\\|b | 1 |  |\n| c |  | true |");
    const nested = toModelResult({ content: [], structuredContent: { city: { name: "Oslo" } } }, opts);
    expect(nested.text).toBe('```json\n{\n  "city": {\n    "name": "Oslo"\n  }\n}\n```');
  });

  it("never gives the model a file's base64 from structured content beside an image", () => {
    const big = Buffer.alloc(3_000, 7).toString("base64");
    const r = toModelResult(
      {
        content: [{ type: "image", data: big, mimeType: "image/png" }],
        structuredContent: { width: 40, height: 30, image: big, thumbnail: "A".repeat(2_400) },
      },
      { ...opts, maxChars: 100_000 },
    );
    expect(r.artifacts).toHaveLength(1);
    expect(r.text).not.toContain(big.slice(0, 40));
    expect(r.text).not.toContain("A".repeat(100));
    expect(r.text).toContain("| width | 40 |");
    expect(r.text).toContain("| image | [binary content, attached as files-read-1.png] |");
    expect(r.text).toContain("| thumbnail | [2400 characters of base64 data left out] |");
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
