import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ScriptedProvider, say } from "../../test/support/scripted.js";
import { createThreadLock } from "../store/locks.js";
import { createState } from "../store/state.js";
import { fakeSlack, KEY, TakeoverBed } from "./takeover.test-helper.js";

const STRAY = "slack:T1:C9:1712345678.000900";

describe("a turn's key listed as pending without its record", () => {
  let bed: TakeoverBed;
  beforeEach(async () => {
    bed = await TakeoverBed.open();
  });
  afterEach(() => bed.close());

  it("is taken off the list by the watch once two rounds saw it, unless its thread's lock is held", async () => {
    const { dispatcher } = bed.setup(new ScriptedProvider([say("unused")]), {
      lock: createThreadLock(bed.store),
    });
    await dispatcher.recoverInterrupted([fakeSlack().adapter]);
    const state = createState(bed.store);
    // Left by a crash between the list's write and the record's, and one whose thread another process holds.
    await state.listAdd("turns", STRAY);
    await state.listAdd("turns", KEY);
    const held = await state.acquireLock(KEY, 60_000, "someone-else");
    expect(held).toBeDefined();
    await vi.waitFor(async () => expect(await state.listMembers("turns")).toEqual([KEY]), {
      timeout: 10_000,
      interval: 200,
    });
    expect(await bed.ledger.pending()).toEqual([]);
    await state.releaseLock(held!);
    await vi.waitFor(async () => expect(await state.listMembers("turns")).toEqual([]), {
      timeout: 10_000,
      interval: 200,
    });
  }, 30_000);
});
