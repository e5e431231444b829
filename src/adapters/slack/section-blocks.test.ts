import { describe, expect, it } from "vitest";
import { questionFor, settledText } from "../../runtime/approvals/questions.js";
import type { ApprovalRecord } from "../../store/approvals.js";
import { questionBlocks } from "./reply-offers.js";
import { SECTION_TEXT_MAX, sectionBlock, sectionBlocks } from "./section-blocks.js";

/** An approval of a call whose arguments are HTML: every `<` is four characters once escaped. */
const htmlCall: ApprovalRecord = {
  ref: "a1",
  key: "slack:T1:C1:1.000001",
  callId: "c1",
  server: "web",
  tool: "render_page",
  arguments: { html: "<p><b>".repeat(200) },
  asker: { id: "U_ALICE", name: "alice" },
  platform: "slack",
  channel: "C1",
  askedAt: new Date(0).toISOString(),
  expiresAt: new Date(600_000).toISOString(),
};

const texts = (blocks: Array<{ type: string; text?: unknown }>) =>
  blocks.filter((b) => b.type === "section").map((b) => (b.text as { text: string }).text);
/** How many fence lines a section has: even when every code block it opens it closes. */
const fences = (text: string) => text.split("\n").filter((l) => l === "```").length;
/** Every `&` begins one of Slack's three entities: none was cut in half. */
const wholeEntities = (text: string) => text.replace(/&(amp|lt|gt);/g, "").includes("&") === false;
const unescaped = (text: string) => text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");

describe("Slack section blocks", () => {
  it("keeps an approval question's closing fence and deadline when its arguments are full of <", () => {
    const sections = texts(questionBlocks(questionFor(htmlCall, 600_000)));
    expect(sections.length).toBeGreaterThan(1);
    for (const text of sections) {
      expect(text.length).toBeLessThanOrEqual(SECTION_TEXT_MAX);
      expect(fences(text) % 2).toBe(0);
      expect(wholeEntities(text)).toBe(true);
    }
    expect(sections.at(-1)).toMatch(
      /```\nalice or an approver can decide within 10 minutes; after that it is not run\.$/,
    );
    // Every character of the arguments shown (their own cut, at 1,200, says how much is left out).
    const flat = (text: string) => text.replace(/```|\n/g, "");
    expect(flat(unescaped(sections.join("")))).toContain(
      flat(JSON.stringify(htmlCall.arguments, null, 2).slice(0, 1_200)),
    );
  });

  it("keeps a settled question's start and its closing fence in its one section", () => {
    const text = sectionBlock(
      settledText(htmlCall, { kind: "deny", by: { id: "U_BOB" }, at: new Date(0).toISOString() }, 600_000),
    ).text?.text as string;
    expect(text.length).toBeLessThanOrEqual(SECTION_TEXT_MAX);
    expect(text.startsWith("🚫 U_BOB denied `render_page` from *web*: it was not run.\n```")).toBe(true);
    expect(text).toMatch(/more characters\)\n```$/);
    expect(text).toContain("```\n…\n```");
    expect(fences(text) % 2).toBe(0);
    expect(wholeEntities(text)).toBe(true);
  });

  it("cuts a line too long for a section between links, never inside one", () => {
    const line = Array.from({ length: 200 }, (_, i) => `[doc ${i}](https://docs.example.com/${i})`).join("");
    const sections = texts(sectionBlocks(line, 50));
    expect(sections.length).toBeGreaterThan(1);
    for (const text of sections) {
      expect(text.length).toBeLessThanOrEqual(SECTION_TEXT_MAX);
      expect(text).toMatch(/^<https:\/\/docs\.example\.com\/\d+\|doc \d+>/);
      expect(text).toMatch(/\|doc \d+>$/);
    }
  });

  it("fits a text longer than a message's blocks in them, its start and its end kept", () => {
    const lines = Array.from({ length: 20_000 }, (_, i) => `line ${i}`).join("\n");
    const sections = texts(sectionBlocks(`intro\n\`\`\`\n${lines}\n\`\`\`\nthe end`, 48));
    expect(sections).toHaveLength(48);
    expect(sections[0]?.startsWith("intro\n```\nline 0\n")).toBe(true);
    expect(sections[46]?.endsWith("\n```\n…")).toBe(true);
    expect(sections[47]).toMatch(/^```\nline \d+\n[\s\S]*\nline 19999\n```\nthe end$/);
    for (const text of sections) expect(fences(text) % 2).toBe(0);
  });

  it("leaves a short text in one section, as toMrkdwn writes it", () => {
    expect(sectionBlocks("**Hi** a<b\n```\nx\n```", 3)).toEqual([
      { type: "section", text: { type: "mrkdwn", text: "*Hi* a&lt;b\n```\nx\n```" } },
    ]);
  });
});
