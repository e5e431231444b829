import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { configSchema } from "../../config.js";
import type { FormField } from "../../core/forms.js";
import { FormBook } from "../../store/forms.js";
import { openStore, type Store } from "../../store/index.js";
import type { Interaction, Question, Reply } from "../contract.js";
import { FormDesk } from "./desk.js";

const fields: FormField[] = [
  { name: "name", id: "f0", label: "Name", kind: "text", required: true },
  { name: "age", id: "f1", label: "Age", kind: "integer", required: false, minimum: 1 },
];

/** A reply that records its questions and what they were settled with. */
function recordingReply() {
  const asked: Question[] = [];
  const settled: string[] = [];
  const reply = {
    ask: async (q: Question) => {
      asked.push(q);
      return `m${asked.length}`;
    },
    settle: async (_id: string, text: string) => {
      settled.push(text);
    },
  } as unknown as Reply;
  return { reply, asked, settled };
}

function interaction(over: Partial<Interaction>): Interaction & { said: string[] } {
  const said: string[] = [];
  return {
    id: `i${Math.random()}`,
    kind: "button",
    ref: "",
    value: "",
    platform: "slack",
    user: { id: "U_ALICE", name: "alice" },
    respond: async (t: string) => {
      said.push(t);
    },
    said,
    ...over,
  };
}

describe("the forms desk across replicas", () => {
  let dir: string;
  let store: Store;
  const config = configSchema.parse({ approvals: { expireAfterMs: 10_000 } });

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "sb-forms-"));
    store = await openStore(`sqlite://${join(dir, "s.sqlite")}`);
  });

  afterEach(async () => {
    vi.useRealTimers();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("hands the waiting call an answer submitted to another replica, once", async () => {
    const here = new FormDesk({ config, book: new FormBook(store) });
    const there = new FormDesk({ config, book: new FormBook(store) });
    const { reply, asked, settled } = recordingReply();
    const elicit = here.asker({
      reply,
      key: "slack:T1:C1:1.1",
      user: { id: "U_ALICE", name: "alice" },
      platform: "slack",
      channel: "C1",
    });
    const answer = elicit(
      { mode: "form", server: "everything", message: "Who are you?", fields },
      new AbortController().signal,
    );
    await expect.poll(() => asked.length).toBe(1);
    const ref = asked[0]!.ref;
    const record = (await there.find(ref))!;

    const opened = await there.interact(interaction({ ref, value: "form" }), record);
    expect(opened && "open" in opened && opened.open.fields.map((f) => f.id)).toEqual(["f0", "f1"]);

    const wrong = await there.interact(
      interaction({ ref, kind: "form", via: "p0", value: { f0: "", f1: "0" } }),
      record,
    );
    expect(wrong).toEqual({
      errors: { f0: "Name: this field is required.", f1: "Age: enter a whole number of at least 1." },
    });

    const first = interaction({ ref, kind: "form", via: "p0", value: { f0: "Ada", f1: "36" } });
    expect(await there.interact(first, record)).toBeUndefined();
    expect(await answer).toEqual({ action: "accept", content: { name: "Ada", age: 36 } });
    expect(settled).toEqual(["✅ alice filled in **everything**'s form."]);

    const late = interaction({ ref, kind: "form", via: "p0", value: { f0: "Eve" } });
    await there.interact(late, record);
    expect(late.said).toEqual([
      "This form is no longer waiting for an answer: the tool call that asked for it has ended.",
    ]);
  });

  it("refuses anyone but the asker, and forged parts, without an effect", async () => {
    const desk = new FormDesk({ config, book: new FormBook(store) });
    const { reply, asked } = recordingReply();
    const controller = new AbortController();
    const answer = desk.asker({
      reply,
      key: "k",
      user: { id: "U_ALICE" },
      platform: "discord",
      channel: "C1",
    })({ mode: "form", server: "s", message: "m", fields }, controller.signal);
    await expect.poll(() => asked.length).toBe(1);
    const ref = asked[0]!.ref;
    const record = (await desk.find(ref))!;
    const bob = interaction({ ref, value: "decline", user: { id: "U_BOB", name: "bob" } });
    expect(await desk.interact(bob, record)).toBeUndefined();
    expect(bob.said).toEqual(["Only U_ALICE can answer this, since it is their request; nothing changed."]);
    const forged = interaction({ ref, kind: "form", via: "p7", value: { f0: "x" } });
    await desk.interact(forged, record);
    expect(forged.said).toEqual(["That submission does not belong to this form, so nothing changed."]);
    const odd = interaction({ ref, value: "approve" });
    await desk.interact(odd, record);
    expect(odd.said).toEqual(["That is not one of this form's choices, so nothing changed."]);
    // The tool call ends (the server gave up, or the turn was stopped): the form is cancelled.
    controller.abort();
    expect(await answer).toEqual({ action: "cancel" });
  });

  it("cancels at once when the turn is stopped while its question is still being posted", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] });
    const book = new FormBook(store);
    const desk = new FormDesk({ config, book });
    const { reply, asked, settled } = recordingReply();
    // The post waits behind the channel's other writes until the test lets it land.
    let land: (id: string) => void = () => undefined;
    reply.ask = (q: Question) => {
      asked.push(q);
      return new Promise<string>((resolve) => {
        land = resolve;
      });
    };
    const controller = new AbortController();
    let result: unknown;
    void desk
      .asker({ reply, key: "k", user: { id: "U_ALICE" }, platform: "slack", channel: "C1" })(
        { mode: "form", server: "everything", message: "Who are you?", fields },
        controller.signal,
      )
      .then((a) => {
        result = a;
      });
    await expect.poll(() => asked.length).toBe(1);
    const ref = asked[0]!.ref;
    controller.abort();
    land("m1");
    // Far short of the 10 s expiry: only the Stop can end the form this soon.
    await vi.advanceTimersByTimeAsync(1_000);
    await expect.poll(() => result).toEqual({ action: "cancel" });
    await expect
      .poll(() => settled)
      .toEqual(["✖️ **everything**'s form is no longer needed: the tool call ended."]);
    expect(await book.live(ref)).toBe(false);
    expect(await book.answered(ref)).toMatchObject({ action: "cancel", end: "ended" });
    expect(vi.getTimerCount()).toBe(0);
  });

  it("asks only to accept a form with no fields, which has nothing to open", async () => {
    const desk = new FormDesk({ config, book: new FormBook(store) });
    const { reply, asked } = recordingReply();
    const answer = desk.asker({
      reply,
      key: "k",
      user: { id: "U_ALICE", name: "alice" },
      platform: "discord",
      channel: "C1",
    })(
      { mode: "form", server: "deploys", message: "Go ahead with the rollout?", fields: [] },
      new AbortController().signal,
    );
    await expect.poll(() => asked.length).toBe(1);
    const question = asked[0]!;
    expect(question.choices.map((c) => c.value)).toEqual(["accept", "decline", "cancel"]);
    expect(question.text).toContain("asks alice to confirm");
    const record = (await desk.find(question.ref))!;
    const open = interaction({ ref: question.ref, value: "form" });
    expect(await desk.interact(open, record)).toBeUndefined();
    expect(open.said).toEqual(["That is not one of this form's choices, so nothing changed."]);
    expect(await desk.interact(interaction({ ref: question.ref, value: "accept" }), record)).toBeUndefined();
    expect(await answer).toEqual({ action: "accept", content: {} });
  });

  it("cancels at once where nobody can be asked", async () => {
    const desk = new FormDesk({ config, book: new FormBook(store) });
    const elicit = desk.asker({
      reply: {} as Reply,
      key: "k",
      user: { id: "u" },
      platform: "console",
      channel: "c",
    });
    expect(
      await elicit({ mode: "form", server: "s", message: "m", fields }, new AbortController().signal),
    ).toEqual({
      action: "cancel",
    });
  });
});
