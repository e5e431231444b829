import { describe, expect, it } from "vitest";
import { splitToFit } from "./fit.js";
import { prng } from "./stream.fake.js";
import { tablesToCodeBlocks } from "./tables.js";

const WORDS = ["alpha", "beta", "a&b", "<x>", "**bold**", "`code`", "😀", "𝒳𝒴", "👍🏽", "end.", "wow!"];
const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;" };

/** Tables as code blocks, then Slack's escapes: both lengthen a part, the first by a factor. */
const renders = {
  tables: tablesToCodeBlocks,
  escaped: (md: string) => tablesToCodeBlocks(md).replace(/[&<>]/g, (c) => ESCAPES[c] ?? c),
};

/** Prose, code blocks in both fence styles and tables, one of whose cells may be long. */
function document(seed: number, longCell: number): string {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const words = (n: number) => Array.from({ length: n }, () => pick(WORDS)).join(" ");
  const blocks: string[] = [];
  for (let b = 0, n = 2 + Math.floor(rand() * 8); b < n; b++) {
    const kind = rand();
    if (kind < 0.4) {
      const cols = 2 + Math.floor(rand() * 3);
      const row = () =>
        `| ${Array.from({ length: cols }, () => words(1 + Math.floor(rand() * 2))).join(" | ")} |`;
      const rows = Array.from({ length: 1 + Math.floor(rand() * 60) }, row);
      const wide = Math.floor(rand() * rows.length);
      if (rand() < 0.5) rows[wide] = `| ${"w".repeat(1 + Math.floor(rand() * longCell))} ${rows[wide]}`;
      blocks.push([row(), `|${"---|".repeat(cols)}`, ...rows].join("\n"));
    } else if (kind < 0.6) {
      const fence = pick(["```", "~~~", "````ts"]);
      const lines = Array.from({ length: 1 + Math.floor(rand() * 30) }, () =>
        pick(["  if (a < b) { return 😀; }", "x = 1", "| a | b |", "y".repeat(Math.floor(rand() * 200))]),
      );
      blocks.push(`${fence}\n${lines.join("\n")}\n${fence.replace("ts", "")}`);
    } else {
      const lines = Array.from({ length: 1 + Math.floor(rand() * 4) }, () =>
        words(3 + Math.floor(rand() * 40)),
      );
      blocks.push(lines.join("\n"));
    }
  }
  return blocks.join(rand() < 0.5 ? "\n\n" : "\n");
}

const HIGH = /[\ud800-\udbff]$/;
const LOW = /^[\udc00-\udfff]/;

describe("splitToFit on random answers with tables, code blocks and emoji", () => {
  it("fits every part after rendering, keeps the answer exact, cuts no character, and makes no tiny parts", () => {
    for (let seed = 1; seed <= 200; seed++) {
      const rand = prng(seed * 7919);
      const max = 600 + Math.floor(rand() * 1_900);
      const doc = document(seed, 40);
      for (const [name, render] of Object.entries(renders)) {
        const parts = splitToFit(doc, max, null, render);
        const where = `seed ${seed}, ${name}, max ${max}`;
        expect(parts.map((p) => p.source).join(""), where).toBe(doc);
        parts.forEach((part, i) => {
          expect(render(part.text).length, `${where}, part ${i}`).toBeLessThanOrEqual(max);
          expect(HIGH.test(part.source) || LOW.test(part.source), `${where}, part ${i}`).toBe(false);
          // A line of these answers renders well under a tenth of a message, rows padded
          // to their table's widest cell included: a part cut shorter was shrunk too far.
          if (i < parts.length - 1)
            expect(part.source.length, `${where}, part ${i}`).toBeGreaterThanOrEqual(max / 10);
        });
      }
    }
  });

  it("with small messages and very wide cells, still keeps the answer exact and fits whatever can fit", () => {
    for (let seed = 1; seed <= 200; seed++) {
      const rand = prng(seed * 104729);
      const max = 40 + Math.floor(rand() * 300);
      const doc = document(seed, 400);
      for (const [name, render] of Object.entries(renders)) {
        const parts = splitToFit(doc, max, null, render);
        const where = `seed ${seed}, ${name}, max ${max}`;
        expect(parts.map((p) => p.source).join(""), where).toBe(doc);
        parts.forEach((part, i) => {
          expect(HIGH.test(part.source) || LOW.test(part.source), `${where}, part ${i}`).toBe(false);
          // Over the limit only when a single character is already too much (a table's
          // header repeated, or a fence reopened, around it).
          if (render(part.text).length > max) expect([...part.source], `${where}, part ${i}`).toHaveLength(1);
        });
      }
    }
  });

  it("cuts a document with a table several times wider than its source into few parts, none of one character", () => {
    const rows = Array.from(
      { length: 50 },
      (_, i) =>
        `| v${i}.0 | ${i === 44 ? "Rewrote the scheduler so that a 429 pauses only its own bucket".repeat(2) : "Bug fixes"} | 2024 |`,
    );
    const doc = `Release history:\n\n| Version | Changes | Year |\n|---|---|---|\n${rows.join("\n")}\n\nThat is all.`;
    const parts = splitToFit(doc, 2_000, null, tablesToCodeBlocks);
    expect(parts.length).toBeLessThanOrEqual(3);
    expect(parts.every((p) => p.source.length > 100)).toBe(true);
    expect(parts.map((p) => p.source).join("")).toBe(doc);
  });
});
