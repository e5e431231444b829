import { describe, expect, it } from "vitest";
import { splitToFit } from "./fit.js";
import { tablesToCodeBlocks } from "./tables.js";

const table = (rows: number) =>
  [
    "| item | value |",
    "| --- | ---: |",
    ...Array.from({ length: rows }, (_, i) => `| item ${i} | value number ${i} |`),
  ].join("\n");

/** Lines of a rendered message that show as raw table pipes (outside its code blocks). */
function pipeLines(rendered: string): string[] {
  let code = false;
  return rendered.split("\n").filter((line) => {
    if (line.startsWith("```")) code = !code;
    return !code && /^\s*\|.*\|\s*$/.test(line);
  });
}

describe("splitToFit with tables", () => {
  it("gives a table cut between messages its header again, so each message renders it as a table", () => {
    const answer = `Here are the figures.\n\n${table(120)}\n\nDone.`;
    const parts = splitToFit(answer, 2_000, null, tablesToCodeBlocks);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) {
      const rendered = tablesToCodeBlocks(part.text);
      expect(rendered.length).toBeLessThanOrEqual(2_000);
      expect(pipeLines(rendered)).toEqual([]);
    }
    expect(parts[1]?.text.startsWith("| item | value |\n| --- | ---: |\n| item ")).toBe(true);
    // The sources still carry the answer exactly once.
    expect(parts.map((p) => p.source).join("")).toBe(answer);
    expect(parts.at(-1)?.text.endsWith("\n\nDone.")).toBe(true);
  });

  it("carries the table into a split that starts where an earlier one ended", () => {
    const answer = `${table(10)}\n`;
    const cut = answer.indexOf("| item 5");
    const first = splitToFit(answer.slice(0, cut), 2_000, null, tablesToCodeBlocks);
    const open = first.at(-1)?.table ?? null;
    expect(open).toBe("| item | value |\n| --- | ---: |\n");
    const rest = splitToFit(answer.slice(cut), 2_000, null, tablesToCodeBlocks, open);
    expect(rest[0]?.text).toBe(`${open}${answer.slice(cut)}`);
  });

  it("repeats nothing for pipes inside a code block, or after the table ended", () => {
    const fenced = `\`\`\`\n${table(150)}\n\`\`\`\n`;
    const parts = splitToFit(fenced, 2_000, null, tablesToCodeBlocks);
    expect(parts.length).toBeGreaterThan(1);
    expect(parts.every((p) => p.table === null)).toBe(true);
    const ended = splitToFit(`${table(3)}\n\nAfter it.\n`, 2_000, null);
    expect(ended[0]?.table).toBeNull();
  });
  it("finds a table cut after a code block that began in the message before", () => {
    const code = Array.from({ length: 60 }, (_, i) => `line ${i} of the log`).join("\n");
    const answer = `\`\`\`\n${code}\n\`\`\`\n\n${table(150)}\n`;
    const parts = splitToFit(answer, 1_000, null, tablesToCodeBlocks);
    expect(parts[0]?.open).not.toBeNull();
    for (const part of parts) expect(pipeLines(tablesToCodeBlocks(part.text))).toEqual([]);
  });

  it("does not repeat a header that would fill most of a message, and never goes over the limit", () => {
    const wide = `| ${"a".repeat(700)} | b |\n| --- | --- |\n`;
    const rows = Array.from({ length: 40 }, (_, i) => `| ${i} | row ${i} |`).join("\n");
    const parts = splitToFit(`${wide}${rows}\n`, 1_000, null);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect(part.text.length).toBeLessThanOrEqual(1_000);
    expect(parts.slice(1).some((p) => p.text.includes("a".repeat(700)))).toBe(false);
  });
});
