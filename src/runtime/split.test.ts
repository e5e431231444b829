import { describe, expect, it } from "vitest";
import { type Fence, firstPart, joinParts, openFenceAtEnd, splitMarkdown, splitMessage } from "./split.js";
import { prng } from "./stream.fake.js";

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Every invariant a split must keep, checked on one input. */
function checkSplit(input: string, limit: number): string[] {
  const parts = splitMarkdown(input, limit);
  let open: Fence | null = null;
  // Plain checks: thousands of inputs run through here, and `expect` is slow at that scale.
  const check = (ok: boolean, what: string, part: string) => {
    if (!ok) throw new Error(`${what}: ${JSON.stringify(part)}`);
  };
  for (const part of parts) {
    check(part.text.length <= limit, `part longer than ${limit}`, part.text);
    check(openFenceAtEnd(part.text) === null, "fence left open", part.text);
    const close = !part.open ? "" : part.source.endsWith("\n") ? part.open.closer : `\n${part.open.closer} `;
    const reopen = open ? `${open.opener}\n` : "";
    check(part.text === reopen + part.source + close, "text is not source plus repairs", part.text);
    check(!LONE_SURROGATE.test(part.text), "surrogate pair cut", part.text);
    open = part.open;
  }
  expect(parts.map((p) => p.source).join("")).toBe(input);
  const texts = parts.map((p) => p.text);
  // The documented ambiguities of the last part: a closer added to a fence the input never
  // closed, and an input that ends with a closing line and a space.
  const allowed = [input];
  const endFence = openFenceAtEnd(input);
  if (endFence) allowed.push(input + endFence.closer);
  const spaced = /\n {0,3}(`{3,}|~{3,}) $/.exec(input);
  if (spaced) allowed.push(input.slice(0, spaced.index));
  expect(allowed).toContain(joinParts(texts));
  return texts;
}

describe("splitMessage", () => {
  it("returns the text as one part when it fits", () => {
    expect(splitMessage("Hello **world**.\n\nBye.", 100)).toEqual(["Hello **world**.\n\nBye."]);
  });

  it("returns no parts for an empty text", () => {
    expect(splitMessage("", 100)).toEqual([]);
  });

  it("rejects a limit below one", () => {
    expect(() => splitMessage("x", 0)).toThrow(RangeError);
  });

  it("cuts after a blank line when a paragraph break fills half the message", () => {
    const a = `${"a ".repeat(30)}\nline two`;
    const b = "b ".repeat(30);
    expect(splitMessage(`${a}\n\n${b}`, 90)).toEqual([`${a}\n\n`, b]);
  });

  it("cuts after a line break rather than after a sentence", () => {
    const text = `${"First sentence. ".repeat(3)}\n${"More words here. ".repeat(4)}`;
    expect(checkSplit(text, 60)[0]).toBe(`${"First sentence. ".repeat(3)}\n`);
  });

  it("cuts after a sentence end rather than between words", () => {
    expect(checkSplit("One two three. Four five six seven eight", 24)[0]).toBe("One two three. ");
  });

  it("cuts between words when there is no sentence end", () => {
    expect(checkSplit("alpha beta gamma delta epsilon", 13)).toEqual([
      "alpha beta ",
      "gamma delta ",
      "epsilon",
    ]);
  });

  it("cuts a word longer than the limit where it must", () => {
    expect(checkSplit("x".repeat(250), 100).map((t) => t.length)).toEqual([100, 100, 50]);
  });

  it("never cuts a surrogate pair in half", () => {
    const parts = checkSplit("😀".repeat(100), 51);
    expect(parts.every((p) => p.length === 50)).toBe(true);
  });

  it("closes a code fence at the end of a part and reopens it with the same info string", () => {
    const code = Array.from({ length: 30 }, (_, i) => `const v${i} = ${i};`).join("\n");
    const input = `Intro.\n\n\`\`\`ts\n${code}\n\`\`\`\n\nOutro.`;
    const parts = checkSplit(input, 200);
    expect(parts.length).toBeGreaterThan(2);
    expect(parts[0]).toMatch(/\n```$/);
    expect(parts[1]).toMatch(/^```ts\nconst v/);
  });

  it("moves a whole code block to the next part rather than splitting it, when the prose before fills half", () => {
    const prose = "Some prose here. ".repeat(7);
    const code = `\`\`\`sh\n${"echo hello\n".repeat(8)}\`\`\``;
    expect(checkSplit(`${prose}\n\n${code}`, 200)).toEqual([`${prose}\n\n`, code]);
  });

  it("leaves no empty code block at the edge of a part", () => {
    const input = `${"word ".repeat(30)}\n\n\`\`\`ts\n${"let x = 1;\n".repeat(12)}\`\`\`\nafter`;
    for (let limit = 40; limit < 200; limit++) {
      for (const text of [
        ...checkSplit(input, limit),
        ...checkSplit(input.slice(input.indexOf("```")), limit),
      ]) {
        expect(text).not.toMatch(/```ts\n```/);
      }
    }
  });

  it("keeps tilde fences and longer backtick fences that contain ``` lines intact", () => {
    const inner = Array.from({ length: 12 }, (_, i) => `\`\`\`\nnested ${i}\n\`\`\``).join("\n");
    const input = `A:\n\n\`\`\`\`md\n${inner}\n\`\`\`\`\n\nB:\n\n~~~py\n${"print(1)\n".repeat(20)}~~~\n`;
    const parts = checkSplit(input, 80);
    expect(parts.some((p) => p.startsWith("````md\n"))).toBe(true);
    expect(parts.some((p) => p.startsWith("~~~py\n") && p.endsWith("~~~"))).toBe(true);
  });

  it("closes a fence that never closes in every part", () => {
    const input = `Look:\n\n\`\`\`js\n${"let a = 1;\n".repeat(30)}let end`;
    const parts = checkSplit(input, 100);
    expect(parts.at(-1)).toMatch(/^```js\n[\s\S]*let end\n``` $/);
    expect(joinParts(parts)).toBe(input);
  });

  it("splits a code line longer than the limit inside its fence", () => {
    const input = `\`\`\`\n${"0123456789".repeat(40)}\n\`\`\``;
    const parts = checkSplit(input, 120);
    // Each cut closes the fence with the marked closer ("``` "); the last part has the original one.
    expect(parts.length).toBeGreaterThan(2);
    expect(parts.slice(0, -1).every((p) => p.startsWith("```\n") && p.endsWith("\n``` "))).toBe(true);
    expect(parts.at(-1)).toMatch(/^```\n\d+\n```$/);
  });

  it("keeps the limit even when a fence's opening line is longer than the limit", () => {
    const input = `Intro\n\n\`\`\`${"x".repeat(300)}\ncode\n\`\`\`\n`;
    const parts = splitMarkdown(input, 100);
    expect(parts.every((p) => p.text.length <= 100)).toBe(true);
    expect(parts.map((p) => p.source).join("")).toBe(input);
  });

  it("does not cut inside a fence line nor leave a part ending on one", () => {
    const input = `${"word ".repeat(18)}\n\`\`\`python\nx = 1\n\`\`\`\n`;
    for (let limit = 30; limit < 120; limit++) {
      for (const part of splitMarkdown(input, limit)) {
        expect(part.source).not.toMatch(/(^|\n)`{1,3}(p[a-z]*)?$/);
      }
      checkSplit(input, limit);
    }
  });
});

/** Random Markdown: prose, long words, emoji, fences of every kind, some never closed. */
function randomMarkdown(rand: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const word = () =>
    rand() < 0.05
      ? "w".repeat(20 + Math.floor(rand() * 200))
      : pick(["a", "the", "API", "😀", "`x`", "|", "é", "end."]);
  const sentence = () =>
    Array.from({ length: 1 + Math.floor(rand() * 12) }, word).join(" ") + pick([". ", "! ", "? ", "", ".\n"]);
  const paragraph = () => Array.from({ length: 1 + Math.floor(rand() * 5) }, sentence).join("");
  const fence = (closeIt: boolean) => {
    const marker = pick(["```", "```", "````", "~~~", "~~~~~"]);
    const indent = pick(["", "", " ", "  "]);
    const lines = Array.from({ length: Math.floor(rand() * 25) }, () =>
      pick(["x = 1", "", "  return `y`;", "```", "~~~", "z".repeat(Math.floor(rand() * 300)), "emoji 😀😀"]),
    );
    const body = lines.filter((l) => !(l[0] === marker[0] && marker.length <= 3 && l.startsWith(marker)));
    const open = `${indent}${marker}${pick(["", "ts", "python", " js title=x"])}\n${body.join("\n")}`;
    if (!closeIt) return open + pick(["", "\n"]);
    return `${open}${body.length ? "\n" : ""}${marker}${pick(["", "`", " "]).replace("`", marker[0]!)}`;
  };
  const blocks = Array.from({ length: 1 + Math.floor(rand() * 8) }, () =>
    rand() < 0.4 ? fence(true) : paragraph(),
  );
  if (rand() < 0.2) blocks.push(fence(false));
  const text = blocks.join(pick(["\n\n", "\n", "\n\n\n"]));
  return rand() < 0.05 ? text.replace(/\n/g, "\r\n") : text;
}

describe("splitMessage on random Markdown", () => {
  it("keeps every part within the limit, every fence balanced, and the text identical (3,000 inputs)", () => {
    const rand = prng(20261121);
    for (let n = 0; n < 3000; n++) {
      const input = randomMarkdown(rand);
      const limit = 30 + Math.floor(rand() * 300);
      try {
        checkSplit(input, limit);
      } catch (error) {
        throw new Error(`input #${n} (limit ${limit}): ${JSON.stringify(input)}`, { cause: error });
      }
    }
  });

  it("finds the same first part reading only the lines it can end in", () => {
    const rand = prng(20260430);
    for (let n = 0; n < 2000; n++) {
      const input = randomMarkdown(rand);
      const limit = 1 + Math.floor(rand() * 400);
      if (input === "") continue;
      const parts = splitMarkdown(input, limit);
      const { part, more } = firstPart(input, limit);
      if (JSON.stringify(part) !== JSON.stringify(parts[0]) || more !== parts.length > 1)
        throw new Error(`input #${n} (limit ${limit}): ${JSON.stringify(input)}`);
    }
  });

  it("keeps a character whole even when a part may hold only one code unit", () => {
    expect(splitMessage("😀a😀", 1)).toEqual(["😀", "a", "😀"]);
  });
});
