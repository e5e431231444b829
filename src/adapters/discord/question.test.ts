import { describe, expect, it } from "vitest";
import { questionMessage } from "./reply.js";

describe("a question as Discord shows it", () => {
  it("puts a link too long for a button in the text, whole, and keeps the other buttons", () => {
    const url = `https://login.example.com/authorize?${"state=abc&code_challenge=xyz&".repeat(30)}`;
    expect(url.length).toBeGreaterThan(512);
    const shown = questionMessage({
      ref: "q1",
      text: "🔗 **crm** asks alice to open a page.",
      choices: [
        { value: "open", label: "Open login.example.com", style: "primary", url },
        { value: "done", label: "Done" },
      ],
    });
    expect(shown.text).toBe(`🔗 **crm** asks alice to open a page.\nOpen login.example.com: <${url}>`);
    expect(shown.components).toEqual([
      { type: 1, components: [{ type: 2, style: 2, label: "Done", custom_id: "sb:q1:done" }] },
    ]);
  });

  it("keeps a short link as a button, and the whole message within 2,000 characters", () => {
    const long = questionMessage({
      ref: "q2",
      text: "x".repeat(3_000),
      choices: [{ value: "open", label: "Open", url: "https://example.com/flow" }],
    });
    expect(long.text).toHaveLength(2_000);
    expect(long.components[0]?.components).toEqual([
      { type: 2, style: 5, label: "Open", url: "https://example.com/flow" },
    ]);
    const url = `https://example.com/${"p".repeat(600)}`;
    const both = questionMessage({
      ref: "q3",
      text: "y".repeat(3_000),
      choices: [{ value: "open", label: "Open", url }],
    });
    expect(both.text.length).toBeLessThanOrEqual(2_000);
    expect(both.text.endsWith(`Open: <${url}>`)).toBe(true);
    expect(both.components).toEqual([]);
    // An address longer than a message: said so, within the limit.
    const huge = questionMessage({
      ref: "q4",
      text: "z".repeat(3_000),
      choices: [{ value: "open", label: "Open", url: `https://example.com/${"p".repeat(2_500)}` }],
    });
    expect(huge.text.length).toBeLessThanOrEqual(2_000);
    expect(huge.text).toContain("too long for Discord to show");
  });
});
