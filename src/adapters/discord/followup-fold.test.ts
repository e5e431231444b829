import { describe, expect, it } from "vitest";
import { splitMessage } from "../../runtime/split.js";
import {
  AnswerFold,
  FOLDED_FILE,
  FOLDED_NOTE,
  followUpCap,
  USER_INSTALL_FOLLOWUPS,
} from "./followup-fold.js";
import type { QuestionRow } from "./reply.js";

const STOP: QuestionRow[] = [
  { type: 1, components: [{ type: 2, style: 4, label: "Stop", custom_id: "sb:s:stop" }] },
];

const fileOf = (edit: { files: { name: string | null; attachment: unknown }[] | undefined }) => {
  const file = edit.files?.find((f) => f.name === FOLDED_FILE);
  return file ? (file.attachment as Buffer).toString("utf8") : undefined;
};

describe("AnswerFold: the messages an interaction may no longer post, in answer.md", () => {
  it("keeps a code block cut between two messages whole in the file, the note outside it", () => {
    const prose = `${"Some prose before the code. ".repeat(20)}\n`;
    const code = `\`\`\`ts\n${"const x = 1; // a line of code\n".repeat(60)}\`\`\`\n`;
    const source = `${prose}${code}And a last word.`;
    const [head, ...more] = splitMessage(source, 2_000);
    expect(more.length).toBeGreaterThan(0);
    expect(head?.endsWith("```")).toBe(true);
    const fold = new AnswerFold("111", head!);
    let edit = fold.post(more[0]!).edit;
    for (const part of more.slice(1)) edit = fold.post(part).edit;
    expect(edit.id).toBe("111");
    expect(edit.text).toBe(`${prose}\n${FOLDED_NOTE}`);
    expect(fileOf(edit)).toBe(`${code}And a last word.`);
    expect(edit.text.length).toBeLessThanOrEqual(2_000);
  });

  it("uploads the file again only when its text changed or files came, and takes buttons from the last message only", () => {
    const fold = new AnswerFold("222", "First message.\nEnds here");
    const { id, edit } = fold.post("and goes on.", undefined, STOP);
    expect(edit).toMatchObject({ text: `First message.\n\n${FOLDED_NOTE}`, controls: STOP });
    expect(fileOf(edit)).toBe("Ends hereand goes on.");
    const again = fold.edit(id, "and goes on.", undefined, []);
    expect(again).toMatchObject({ files: undefined, controls: [] });
    // The writer taking Stop off the message before the last must leave the last one's buttons.
    expect(fold.edit("222", undefined, undefined, []).controls).toBeUndefined();
    expect(fold.has(id) && fold.has("222") && !fold.has("222+2") && !fold.has("333")).toBe(true);
  });

  it("caps follow-ups only for an interaction a user install alone authorized", () => {
    const owners = (guildId: string | null, userId: string | null) =>
      ({ authorizingIntegrationOwners: { guildId, userId } }) as Parameters<typeof followUpCap>[0];
    expect(followUpCap(owners(null, "42"))).toBe(USER_INSTALL_FOLLOWUPS);
    expect(followUpCap(owners("7", "42"))).toBe(Number.POSITIVE_INFINITY);
    expect(followUpCap(owners("0", null))).toBe(Number.POSITIVE_INFINITY);
  });
});
