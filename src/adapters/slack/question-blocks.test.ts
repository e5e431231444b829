import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../../../test/emulators/slack/adapter-harness.js";
import { questionFor } from "../../runtime/approvals/questions.js";
import type { Question } from "../../runtime/contract.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** A page to open, as a server's URL question asks it (see forms/texts.ts). */
const pageQuestion = (url: string): Question => ({
  ref: "f1",
  text: "🔗 **crm** asks alice to open a page on **login.example.com**.",
  choices: [
    { value: "open", label: "Open login.example.com", style: "primary", url },
    { value: "done", label: "Done" },
    { value: "decline", label: "Decline", style: "danger" },
  ],
});

type Block = { type: string; text?: unknown; elements?: Array<{ action_id: string; url?: string }> };

async function asked(question: Question): Promise<Block[]> {
  h = await startHarness();
  const root = h.emu.post("C1", "U_ALICE", "a question");
  const reply = h.adapter.replyFor?.(`slack:T1:C1:${root.ts}`, { messages: [], asker: "U_ALICE" });
  const ts = await reply!.ask!(question);
  return (h.emu.state.find("C1", ts)?.blocks ?? []) as Block[];
}

describe("Slack adapter: a question's blocks", () => {
  it("gives a page of up to 3,000 characters a link button", async () => {
    const url = `https://login.example.com/authorize?${"state=abc&".repeat(50)}`;
    const blocks = await asked(pageQuestion(url));
    expect(blocks.map((b) => b.type)).toEqual(["section", "actions"]);
    expect(blocks[1]?.elements?.[0]?.url).toBe(url);
  });

  it("puts a page whose address is too long for a button in the message whole, never cut, and offers no button for it", async () => {
    const url = `https://login.example.com/authorize?${"state=abc&code_challenge=xyz&".repeat(120)}`;
    expect(url.length).toBeGreaterThan(3_000);
    const blocks = await asked(pageQuestion(url));
    expect(blocks.map((b) => b.type)).toEqual(["section", "markdown", "actions"]);
    expect(blocks[1]?.text).toBe(`[Open login.example.com](${url})`);
    expect(blocks[2]?.elements?.map((e) => e.action_id)).toEqual(["sb:f1:done", "sb:f1:decline"]);
    expect(JSON.stringify(blocks)).not.toContain(`"url":`);
  });

  it("posts an approval whose arguments are full of < with every code block closed and its deadline last", async () => {
    const question = questionFor(
      {
        ref: "a1",
        key: "slack:T1:C1:1.000001",
        callId: "c1",
        server: "web",
        tool: "render_page",
        arguments: { html: "<td>".repeat(300) },
        asker: { id: "U_ALICE", name: "alice" },
        platform: "slack",
        channel: "C1",
        askedAt: new Date(0).toISOString(),
        expiresAt: new Date(600_000).toISOString(),
      },
      600_000,
    );
    const blocks = await asked(question);
    const sections = blocks.filter((b) => b.type === "section").map((b) => (b.text as { text: string }).text);
    expect(blocks.at(-1)?.type).toBe("actions");
    for (const text of sections) expect(text.split("\n").filter((l) => l === "```").length % 2).toBe(0);
    expect(sections.at(-1)).toMatch(
      /\n```\nalice or an approver can decide within 10 minutes; after that it is not run\.$/,
    );
  });
});
