import { describe, expect, it } from "vitest";
import { MAX_LINE_CHARS, StderrTail, stderrLines } from "./stderr-tail.js";

function split(chunks: Array<string | Buffer>): string[] {
  const lines: string[] = [];
  const feed = stderrLines((line) => lines.push(line));
  for (const c of chunks) feed(Buffer.isBuffer(c) ? c : Buffer.from(c));
  return lines;
}

describe("a stdio server's stderr", () => {
  it("is cut into lines at newlines and carriage returns, across chunks", () => {
    expect(split(["start", "ing\nready\r\n", "10%\r20%\r", "done\n"])).toEqual([
      "starting",
      "ready",
      "10%",
      "20%",
      "done",
    ]);
  });

  it("joins a character split between two chunks", () => {
    const bytes = Buffer.from("Fehler: Datei für Überprüfung fehlt\n");
    const at = bytes.indexOf(Buffer.from("ü")) + 1;
    expect(split([bytes.subarray(0, at), bytes.subarray(at)])).toEqual([
      "Fehler: Datei für Überprüfung fehlt",
    ]);
  });

  it("keeps only the start of a line without end, however much more comes", () => {
    const lines: string[] = [];
    const feed = stderrLines((line) => lines.push(line));
    // 10 MB of dots and no newline, then a line.
    const dots = Buffer.from(".".repeat(64 * 1024));
    for (let i = 0; i < 160; i++) feed(dots);
    feed(Buffer.from("..end of dots\nError: disk full\n"));
    expect(lines).toEqual([".".repeat(MAX_LINE_CHARS), "Error: disk full"]);
  });

  it("sums up a failed start with its first error line, cut to 300 characters", () => {
    const tail = new StderrTail("files");
    tail.add("starting");
    tail.add(`Error: cannot open ${"x".repeat(400)}`);
    tail.add("    at main (index.js:1:1)");
    expect(tail.summary()).toBe(`Error: cannot open ${"x".repeat(281)}…`);
  });
});
