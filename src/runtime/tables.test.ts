import { describe, expect, it } from "vitest";
import { tablesToCodeBlocks } from "./tables.js";

describe("tablesToCodeBlocks", () => {
  it("turns a table into a code block with aligned columns", () => {
    const input = [
      "Results:",
      "",
      "| Name | Score |",
      "|---|---|",
      "| Alice | 10 |",
      "| Bob | 7 |",
      "",
      "Done.",
    ];
    expect(tablesToCodeBlocks(input.join("\n"))).toBe(
      [
        "Results:",
        "",
        "```",
        "Name  | Score",
        "------+------",
        "Alice | 10",
        "Bob   | 7",
        "```",
        "",
        "Done.",
      ].join("\n"),
    );
  });

  it("honours right and centre alignment from the delimiter row", () => {
    const input = "| Item | Qty | Note |\n|:--|--:|:-:|\n| tea | 2 | hot |\n| biscuits | 12 | x |";
    expect(tablesToCodeBlocks(input)).toBe(
      [
        "```",
        "Item     | Qty | Note",
        "---------+-----+-----",
        "tea      |   2 | hot",
        "biscuits |  12 |  x",
        "```",
      ].join("\n"),
    );
  });

  it("accepts rows without outer pipes, short rows and escaped pipes", () => {
    const input = "a | b\n--- | ---\n`x\\|y` | **bold**\nonly";
    expect(tablesToCodeBlocks(input)).toBe(
      ["```", "a   | b", "----+-----", "x|y | bold", "```", "only"].join("\n"),
    );
  });

  it("fills missing cells of a short row", () => {
    const input = "| a | b | c |\n|---|---|---|\n| 1 |";
    expect(tablesToCodeBlocks(input)).toBe(["```", "a | b | c", "--+---+--", "1 |   |", "```"].join("\n"));
  });

  it("leaves a table inside a code fence untouched", () => {
    const input = "```md\n| a | b |\n|---|---|\n| 1 | 2 |\n```\n\n~~~\n| c |\n|---|\n~~~";
    expect(tablesToCodeBlocks(input)).toBe(input);
  });

  it("leaves pipes without a delimiter row, and mismatched tables, untouched", () => {
    const input = [
      "a | b is not a table",
      "",
      "| a | b |",
      "| not | a delimiter |",
      "",
      "| a | b |",
      "|---|",
      "",
      "Heading",
      "---",
    ].join("\n");
    expect(tablesToCodeBlocks(input)).toBe(input);
  });

  it("converts every table of a text and keeps the text between them", () => {
    const input = "| x |\n|---|\n| 1 |\nmiddle text\n\n| y |\n|---|\n| 2 |\n";
    expect(tablesToCodeBlocks(input)).toBe("```\nx\n-\n1\n```\nmiddle text\n\n```\ny\n-\n2\n```\n");
  });

  it("uses a longer fence when a cell holds a run of backticks", () => {
    const input = "| code |\n|---|\n| a ``` b |";
    expect(tablesToCodeBlocks(input)).toBe("````\ncode\n-------\na ``` b\n````");
  });

  it("measures wide characters by code point", () => {
    const input = "| k | v |\n|---|---|\n| 😀 | 1 |\n| ab | 2 |";
    expect(tablesToCodeBlocks(input)).toBe("```\nk  | v\n---+--\n😀  | 1\nab | 2\n```");
  });

  it("returns text without tables unchanged", () => {
    const input = "Just **text**, a list:\n\n- one\n- two | three\n";
    expect(tablesToCodeBlocks(input)).toBe(input);
  });
});
