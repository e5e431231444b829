import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { configSchema } from "../../config.js";
import type { PendingStep } from "../../core/messages.js";
import { ApprovalBook } from "../../store/approvals.js";
import { openStore, type Store } from "../../store/index.js";
import { TurnLedger } from "../../store/turns.js";
import type { Question, Reply } from "../contract.js";
import { ApprovalDesk, WRONG_PLACE } from "./desk.js";

const KEY = "slack:T1:C1:1712345678.000100";
const step: PendingStep = {
  assistant: {
    role: "assistant",
    content: "Writing.",
    toolCalls: [{ id: "c1", name: "fs__write_file", arguments: { path: "/tmp/a", content: "x" } }],
  },
  asks: ["c1"],
  settled: [],
};

function questionReply(opts: { failAsk?: boolean } = {}) {
  const asked: Question[] = [];
  const settled: Array<[string, string]> = [];
  const reply: Reply = {
    status: async () => undefined,
    stream: () => ({ write: () => undefined, finish: async () => undefined, fail: async () => undefined }),
    upload: async () => undefined,
    title: async () => undefined,
    notice: async () => undefined,
    ask: async (q) => {
      if (opts.failAsk) throw new Error("channel_not_found");
      asked.push(q);
      return `q${asked.length}`;
    },
    settle: async (id, text) => void settled.push([id, text]),
  };
  return { reply, asked, settled };
}

describe("the approval desk", () => {
  let dir: string;
  let store: Store;
  let ledger: TurnLedger;
  let resumed: string[];
  let desk: ApprovalDesk;
  let shown: ReturnType<typeof questionReply>;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "sb-desk-"));
    store = await openStore(`sqlite://${join(dir, "s.sqlite")}`);
    ledger = new TurnLedger(store);
    resumed = [];
    shown = questionReply();
    desk = new ApprovalDesk({
      config: configSchema.parse({ approvals: { expireAfterMs: 10_000 } }),
      ledger,
      book: new ApprovalBook(store),
      resume: (key) => void resumed.push(key),
      replyFor: () => shown.reply,
    });
  });

  afterEach(async () => {
    desk.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const park = async (reply: Reply) => {
    const record = await ledger.begin(KEY);
    await desk.park(record, step, {
      reply,
      user: { id: "U1", name: "alice" },
      place: { platform: "slack", channel: "C1" },
      toolOf: () => ({ server: "fs", tool: "write_file" }),
    });
    return (await ledger.get(KEY))!;
  };

  /** alice clicks Approve on the question's message; what she was told. */
  const approve = async (ref: string): Promise<string[]> => {
    const said: string[] = [];
    const click = {
      id: "i1",
      kind: "button" as const,
      ref,
      value: "approve",
      platform: "slack" as const,
      user: { id: "U1", name: "alice" },
      messageId: "q1",
      respond: async (t: string) => void said.push(t),
    };
    await desk.interact(click, (await new ApprovalBook(store).get(ref))!);
    return said;
  };

  it("parks the turn with one question per call, stored before it is posted", async () => {
    const record = await park(shown.reply);
    expect(record.waiting?.refs).toEqual({ c1: shown.asked[0]?.ref });
    expect(shown.asked[0]?.text).toContain("`write_file` from **fs**");
    expect(shown.asked[0]?.choices.map((c) => c.value)).toEqual(["approve", "approve_thread", "deny"]);
    expect(await desk.outcome(KEY, record.waiting!, shown.reply)).toBeUndefined();
    expect(resumed).toEqual([]);
  });

  it("ends an unanswered question as denied at its expiry, on the question and for the model", async () => {
    const record = await park(shown.reply);
    const expired = { ...record.waiting!, expiresAt: new Date(Date.now() - 1).toISOString() };
    const outcome = await desk.outcome(KEY, expired, shown.reply);
    expect(outcome?.verdicts.c1).toEqual({
      run: false,
      reason:
        "Nobody approved this call within 10 seconds, so it was not run. Tell the user it needs their approval.",
    });
    expect(shown.settled).toHaveLength(1);
    expect(shown.settled[0]?.[1]).toMatch(
      /^⌛ Nobody decided on `write_file` from \*\*fs\*\* within 10 seconds/,
    );
  });

  it("lets the first decision win: a click racing the expiry keeps the click", async () => {
    const record = await park(shown.reply);
    const ref = record.waiting!.refs.c1!;
    const said = await approve(ref);
    const expired = { ...record.waiting!, expiresAt: new Date(Date.now() - 1).toISOString() };
    const outcome = await desk.outcome(KEY, expired, shown.reply);
    expect(outcome?.verdicts.c1).toEqual({ run: true });
    expect(said).toEqual([]);
    expect(resumed).toEqual([KEY]);
  });

  it("says a call approved just before a new message took the thread was not run after all", async () => {
    const record = await park(shown.reply);
    const ref = record.waiting!.refs.c1!;
    await approve(ref);
    expect(shown.settled.at(-1)?.[1]).toMatch(/^✅/);
    // The thread's next message got the lock before the resumed turn: the step never runs.
    await desk.supersede(KEY, record.waiting!, shown.reply);
    expect(shown.settled.at(-1)?.[0]).toBe("q1");
    expect(shown.settled.at(-1)?.[1]).toMatch(
      /^⏭️ alice approved `write_file` from \*\*fs\*\*, but it was not run: the conversation went on first\./,
    );
  });

  it("never runs a call whose question could not be posted, and goes on at once", async () => {
    const failing = questionReply({ failAsk: true });
    const record = await park(failing.reply);
    expect(resumed).toEqual([KEY]);
    const outcome = await desk.outcome(KEY, record.waiting!, failing.reply);
    expect(outcome?.verdicts.c1).toMatchObject({ run: false });
    expect(outcome?.verdicts.c1).toEqual({
      run: false,
      reason:
        "I could not post the approval question in the thread, so this call was not run. Tell the user.",
    });
  });

  it("refuses a value no question offers, and changes nothing", async () => {
    const record = await park(shown.reply);
    const ref = record.waiting!.refs.c1!;
    const said: string[] = [];
    await desk.interact(
      {
        id: "i2",
        kind: "button",
        ref,
        value: "approve_everything",
        platform: "slack",
        user: { id: "U1" },
        respond: async (t) => void said.push(t),
      },
      (await new ApprovalBook(store).get(ref))!,
    );
    expect(said).toEqual(["That is not one of this question's choices, so nothing was decided."]);
    expect(await new ApprovalBook(store).decision(ref)).toBeUndefined();
    expect(resumed).toEqual([]);
  });

  it("refuses a click with a valid ref from another message than the question's, and changes nothing", async () => {
    const record = await park(shown.reply);
    const ref = record.waiting!.refs.c1!;
    const approval = (await new ApprovalBook(store).get(ref))!;
    expect(approval.messageId).toBe("q1");
    const said: string[] = [];
    // A forged payload: the ref of a real question, clicked on a message elsewhere (or on none).
    for (const messageId of ["1712345999.000200", undefined]) {
      await desk.interact(
        {
          id: `i-${messageId}`,
          kind: "button",
          ref,
          value: "approve",
          platform: "slack",
          user: { id: "U1", name: "alice" },
          ...(messageId ? { messageId } : {}),
          respond: async (t) => void said.push(t),
        },
        approval,
      );
    }
    expect(said).toEqual([WRONG_PLACE, WRONG_PLACE]);
    expect(await new ApprovalBook(store).decision(ref)).toBeUndefined();
    expect(shown.settled).toEqual([]);
    expect(resumed).toEqual([]);
    expect(desk.armed(KEY)).toBe(true);
  });
});
