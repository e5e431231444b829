import { afterEach, describe, expect, it } from "vitest";
import { submitModal } from "../../../test/emulators/discord/components.js";
import { waitFor } from "../../../test/emulators/discord/index.js";
import type { FormView } from "../../core/forms.js";
import type { PromptEntry, ToolHub } from "../../mcp/types.js";
import type { TurnRunner } from "../../runtime/contract.js";
import { expandPrompt, expandPromptForm, type PromptOutcome } from "../../runtime/prompts.js";
import { answer, type Harness, ScriptedRunner, startHarness } from "./harness.test-helper.js";

const EPHEMERAL = 64;

/** A prompt with seven arguments, two of them required: more than a Discord modal's five. */
const REPORT: PromptEntry = {
  server: "ops",
  name: "report",
  description: "An incident report",
  arguments: [
    { name: "title", required: true },
    { name: "severity", required: false },
    { name: "owner", description: "Who handles it", required: true },
    { name: "team", required: false },
    { name: "service", required: false },
    { name: "region", required: false },
    { name: "notes", required: false },
  ],
};

function hub(): ToolHub {
  return {
    tools: () => [],
    status: () => [],
    call: async () => ({ ok: true, text: "", artifacts: [], ms: 0, server: "", tool: "" }),
    close: async () => undefined,
    prompts: () => [REPORT],
    getPrompt: async (_server, name, args) => `${name} with ${JSON.stringify(args)}`,
  };
}

/** The scripted runner with the dispatcher's /prompt, on a hub that offers REPORT. */
class PromptRunner extends ScriptedRunner {
  /** When set, /prompt answers with this form whatever was typed. */
  form?: FormView;

  prompt: NonNullable<TurnRunner["prompt"]> = async (text, opts) =>
    this.form ? { form: this.form } : expandPrompt(hub(), text, opts);

  promptForm = (ref: string, values: Record<string, string | string[]>): Promise<PromptOutcome> =>
    expandPromptForm(hub(), ref, values);
}

let h: Harness;

afterEach(async () => {
  await h?.close();
});

async function start(): Promise<PromptRunner> {
  const runner = new PromptRunner(answer("Noted."));
  h = await startHarness({ runner });
  return runner;
}

describe("Discord /prompt with more arguments than a modal holds", () => {
  it("asks in its modal for the required arguments, and asks the prompt with what was typed", async () => {
    const runner = await start();
    const s = h.emulator.state;
    const rec = h.emulator.slash("prompt", { name: "report" }, s.general, s.alice.id);
    const modal = await waitFor(() => rec.modal, { message: "no modal opened" });
    expect(rec.callbacks).toEqual([9]);
    expect(modal.fields.map((f) => f.label)).toEqual(["title", "owner"]);
    submitModal(h.emulator, { interaction: rec, values: { f0: "Disk full", f2: "alice" } });
    await waitFor(() => runner.done.length === 1);
    expect(runner.inbounds[0]?.text).toBe('report with {"title":"Disk full","owner":"alice"}');
  });

  it("keeps the arguments typed in the command beside the missing ones", async () => {
    const runner = await start();
    const s = h.emulator.state;
    const rec = h.emulator.slash("prompt", { name: "report severity=high region=eu" }, s.general, s.alice.id);
    const modal = await waitFor(() => rec.modal, { message: "no modal opened" });
    expect(modal.fields.map((f) => f.label)).toEqual(["title", "severity", "owner", "region"]);
    submitModal(h.emulator, { interaction: rec, values: { f0: "Disk full", f2: "bob" } });
    await waitFor(() => runner.done.length === 1);
    expect(runner.inbounds[0]?.text).toBe(
      'report with {"title":"Disk full","severity":"high","owner":"bob","region":"eu"}',
    );
  });

  it("says which arguments to type when even those would not fit in one modal", async () => {
    const runner = await start();
    const s = h.emulator.state;
    const rec = h.emulator.slash(
      "prompt",
      { name: "report severity=high team=db service=api region=eu" },
      s.general,
      s.alice.id,
    );
    const told = await waitFor(() =>
      h.emulator.botMessages(s.general).find((m) => m.interactionId === rec.id && m.content),
    );
    expect(told.flags & EPHEMERAL).toBe(EPHEMERAL);
    expect(told.content).toBe(
      "The prompt ops/report needs title=…, owner=… (Who handles it); with the arguments you gave, that is more than one form holds, so type them after its name, like /prompt ops/report title=… owner=… severity=high team=db service=api region=eu.",
    );
    expect(rec.modal).toBeUndefined();
    expect(runner.inbounds).toEqual([]);
  });

  it("tells the person, rather than leave the command unanswered, when Discord will not open the form", async () => {
    const runner = await start();
    // Six inputs: Discord refuses the modal (400, 50035), as it would any modal it finds wrong.
    runner.form = {
      ref: "pfb3BzL3JlcG9ydA",
      title: "report",
      fields: ["a", "b", "c", "d", "e", "f"].map((name, i) => ({
        name,
        id: `f${i}`,
        label: name,
        kind: "text",
        required: true,
      })),
      part: 0,
      count: 1,
      submitLabel: "Ask",
      via: "prompt",
    };
    const s = h.emulator.state;
    const rec = h.emulator.slash("prompt", { name: "report" }, s.general, s.alice.id);
    await waitFor(() => rec.callbacks.length > 0, { message: "the command was never acknowledged" });
    expect(rec.callbacks).toEqual([4]);
    const told = h.emulator.botMessages(s.general).find((m) => m.interactionId === rec.id);
    expect((told?.flags ?? 0) & EPHEMERAL).toBe(EPHEMERAL);
    expect(told?.content).toBe(
      "Discord would not open the form for this prompt's arguments. Type them after its name instead, like /prompt report a=… b=… c=… d=… e=… f=….",
    );
  });
});
