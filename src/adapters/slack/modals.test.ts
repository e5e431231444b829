import { describe, expect, it } from "vitest";
import { viewProblems } from "../../../test/emulators/slack/view-schema.js";
import { checkForm, type FormField, type FormView } from "../../core/forms.js";
import { slackModal } from "./modals.js";

const prefix = `arn:aws:iam::123456789012:role/${"very-long-service-role-path/".repeat(6)}`;
const region: FormField = {
  name: "role",
  id: "f0",
  label: "Role",
  kind: "choice",
  required: true,
  options: [
    { value: `${prefix}deployer`, label: "Deployer" },
    { value: `${prefix}reader`, label: "Reader" },
    { value: "admin", label: "Admin" },
  ],
};
const many: FormField = {
  name: "zones",
  id: "f1",
  label: "Zones",
  kind: "choices",
  required: false,
  options: Array.from({ length: 120 }, (_, i) => ({ value: `zone-${i}`, label: `Zone ${i}` })),
};

const view = (fields: FormField[]): FormView => ({
  ref: "form1",
  title: "deploys",
  fields,
  part: 0,
  count: 1,
  submitLabel: "Send",
});

type Element = { type: string; options?: Array<{ value: string }>; placeholder?: { text: string } };
const elements = (modal: Record<string, unknown>) =>
  (modal.blocks as Array<{ type: string; element?: Element; hint?: { text: string } }>).filter(
    (b) => b.type === "input",
  );

describe("a form as a Slack modal", () => {
  it("carries options whose values are too long for Slack by their place, and gets the whole value back", () => {
    expect(region.options![0]!.value.length).toBeGreaterThan(150);
    const modal = slackModal(view([region]), "{}");
    expect(viewProblems(modal)).toEqual([]);
    const select = elements(modal)[0]!.element!;
    expect(select.options!.map((o) => o.value)).toEqual(["#option-0", "#option-1", "admin"]);
    expect(checkForm([region], { f0: "#option-1" })).toEqual({
      ok: true,
      content: { role: `${prefix}reader` },
    });
  });

  it("asks for a choice among more options than a select holds in a text box that lists them", () => {
    const modal = slackModal(view([many]), "{}");
    expect(viewProblems(modal)).toEqual([]);
    const [input] = elements(modal);
    expect(input!.element!.type).toBe("plain_text_input");
    expect(input!.hint!.text).toMatch(/^Choices: Zone 0, Zone 1, .*Zone 119$/);
    expect(checkForm([many], { f1: "zone 7, Zone 119" })).toEqual({
      ok: true,
      content: { zones: ["zone-7", "zone-119"] },
    });
  });
});
