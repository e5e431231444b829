import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ScriptedProvider, say } from "../../test/support/scripted.js";
import { INTERRUPTED_NOTE } from "./dispatcher.js";
import { ALICE, aliceSays, fakeSlack, KEY, TakeoverBed } from "./takeover.test-helper.js";
import { MAX_TAKEOVERS } from "./turn.js";

/*
 * A thread's new message finds a turn a dead process left unfinished, and finishing it
 * first fails (the platform refuses the restart note just then, the store fails a write).
 * The new message is answered anyway; the cut-off reply must still end, with the note.
 */

describe("a cut-off turn that could not be finished before its thread's new message", () => {
  let bed: TakeoverBed;

  beforeEach(async () => {
    bed = await TakeoverBed.open();
  });

  afterEach(() => bed.close());

  it("gets its restart note after the new message is answered, when the platform refused it at first", async () => {
    const provider = new ScriptedProvider([say("The second answer.")]);
    const { dispatcher } = bed.setup(provider);
    const slack = fakeSlack();
    let refusals = 1;
    slack.adapter.recover = async (_key, address, note) => {
      if (refusals-- > 0) throw new Error("Slack refused the edit just then");
      slack.notes.push(`${address?.messages.join(",")}: ${note}`);
    };
    expect(await dispatcher.recoverInterrupted([slack.adapter])).toBe(0);
    // Died under it too often to be taken over again: it can only end with the note.
    await bed.leftBy("a-process-that-died", { takeovers: MAX_TAKEOVERS, address: { messages: ["1.1"] } });
    const fresh = fakeSlack();
    await dispatcher.handle(aliceSays("e2", "and another thing", fresh.reply));

    expect(fresh.seen).toEqual(["The second answer.", "<finish>"]);
    await vi.waitFor(() => expect(slack.notes).toEqual([`1.1: ${INTERRUPTED_NOTE}`]), { timeout: 10_000 });
    await vi.waitFor(async () => expect(await bed.ledger.pending()).toEqual([]), { timeout: 5_000 });
    await dispatcher.settled();
    expect(provider.requests).toHaveLength(1);
  }, 20_000);

  it("ends with the note, not going on after the newer answer, when the store failed its takeover", async () => {
    const provider = new ScriptedProvider([say("The second answer.")]);
    const { dispatcher, ledger } = bed.setup(provider);
    const slack = fakeSlack();
    expect(await dispatcher.recoverInterrupted([slack.adapter])).toBe(0);
    await bed.askedAlready();
    await bed.leftBy("a-process-that-died", { shown: "Half of the first", address: { messages: ["1.1"] } });
    vi.spyOn(ledger, "takeOver").mockRejectedValueOnce(new Error("connection reset"));
    const fresh = fakeSlack();
    await dispatcher.handle(aliceSays("e2", "and another thing", fresh.reply));

    expect(fresh.seen).toEqual(["The second answer.", "<finish>"]);
    await vi.waitFor(() => expect(slack.notes).toEqual([INTERRUPTED_NOTE]), { timeout: 10_000 });
    await vi.waitFor(async () => expect(await bed.ledger.pending()).toEqual([]), { timeout: 5_000 });
    await dispatcher.settled();
    // Only the new message was asked, and the cut-off reply shows nothing of its answer.
    expect(provider.requests).toHaveLength(1);
    expect(slack.seen).toEqual([]);
  }, 20_000);

  it("is ended at once after the turn that carried it, when a process takes that turn over", async () => {
    const provider = new ScriptedProvider([say("The second answer.")]);
    const { dispatcher } = bed.setup(provider);
    const slack = fakeSlack();
    const owed = { key: KEY, startedAt: "2024-05-01T10:00:00.000Z", id: "turn-0", superseded: true };
    const input = { text: "and another thing", user: ALICE, channel: "C1", mark: "eyes-2" };
    // The carrier's process died too, before either ended.
    await bed.leftBy("a-process-that-died", { input, cutOff: [{ ...owed, address: { messages: ["1.1"] } }] });

    expect(await dispatcher.recoverInterrupted([slack.adapter])).toBe(1);

    expect(slack.seen).toEqual(["The second answer.", "<finish>"]);
    expect(slack.notes).toEqual([INTERRUPTED_NOTE]);
    expect(slack.marks).toEqual(["eyes-2"]);
    expect(await bed.ledger.pending()).toEqual([]);
  });
});
