import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../../../test/emulators/slack/adapter-harness.js";
import { BOT_ID, BOT_USER_ID, type EmuMessage, waitFor } from "../../../test/emulators/slack/index.js";
import { sessionKey } from "../../../test/emulators/slack/web-api-agents.js";
import type { SlackReply } from "./reply.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const POST_UPDATE = { config: { slack: { nativeStreaming: false } } };
const NOTE = "Interrupted by a restart; ask again.";

const session = (h: Harness, root: EmuMessage) => h.emu.api.sessions.get(sessionKey("C1", root.ts));

describe("Slack agent sessions: an answer whose last write fails", () => {
  it("moves the thread's session on when Slack refuses the answer's final update for good", async () => {
    h = await startHarness(POST_UPDATE);
    let failed: unknown = null;
    h.runner.script = async (inbound) => {
      const sink = inbound.reply.stream();
      sink.write("The answer starts");
      await waitFor(() => h!.emu.botReplies("C1", root.ts).length === 1);
      // Every attempt of the final chat.update meets a lasting refusal (an outage such as
      // internal_error is ridden out for a minute instead).
      h!.emu.api.refuse("chat.update", "cant_update_message");
      sink.write(" and Slack never takes its end.");
      failed = await sink.finish({ answered: true }).then(
        () => null,
        (err: unknown) => err,
      );
    };
    const root = h.emu.mention("C1", "U_ALICE", "a question");
    await waitFor(() => failed !== null, { timeoutMs: 15_000 });
    expect(h.emu.botReplies("C1", root.ts).map((r) => r.text)).toEqual(["The answer starts"]);
    await waitFor(() => session(h!, root)?.status === "active");
    expect(session(h, root)?.statuses).toEqual(["processing", "active"]);
    h.emu.api.allow("chat.update");
  });
});

describe("Slack agent sessions: a turn a crash cut off, ended with a note", () => {
  /** The thread as a killed process left it: its session working, maybe its answer begun. */
  function leftByDeadProcess(h: Harness, answerBegun: boolean) {
    // Not delivered: the dead process had taken the message, and this one never heard of it.
    const root = h.emu.state.addMessage({
      channel: "C1",
      user: "U_ALICE",
      text: "a question the crash interrupted",
    });
    h.emu.api.sessions.set(sessionKey("C1", root.ts), {
      channel: "C1",
      threadTs: root.ts,
      status: "processing",
      statuses: ["processing"],
      initiator: "U_ALICE",
    });
    const begun = answerBegun
      ? h.emu.state.addMessage({
          channel: "C1",
          thread_ts: root.ts,
          user: BOT_USER_ID,
          bot_id: BOT_ID,
          text: "The answer starts",
          markdown: true,
        })
      : undefined;
    return { root, address: begun ? { messages: [begun.ts] } : undefined };
  }

  for (const answerBegun of [false, true]) {
    it(`moves on the session the dead process left working (${answerBegun ? "its message edited" : "the note posted"})`, async () => {
      h = await startHarness(POST_UPDATE);
      const { root, address } = leftByDeadProcess(h, answerBegun);
      await h.adapter.recover!(`slack:T1:C1:${root.ts}`, address, NOTE);
      const ended = answerBegun ? `The answer starts\n\n${NOTE}` : NOTE;
      expect(h.emu.botReplies("C1", root.ts).map((r) => r.text)).toEqual([ended]);
      await waitFor(() => session(h!, root)?.status === "active");
      expect(session(h, root)?.statuses).toEqual(["processing", "active"]);
    });
  }
});

describe("Slack agent sessions: a message declined before it is answered", () => {
  it("ends the session its acknowledgement started, and an acknowledgement late under load starts none", async () => {
    h = await startHarness(POST_UPDATE);
    let done = false;
    h.runner.script = async (inbound) => {
      const reply = inbound.reply as SlackReply;
      await waitFor(
        () => h!.emu.api.sessions.get(sessionKey("C1", reply.place.threadTs))?.status === "processing",
      );
      await reply.notice("You have used your daily budget.");
      await reply.declined();
      // The :eyes: waited for the workspace's Tier 2 budget: its session start comes after.
      await reply.startSession();
      done = true;
    };
    const root = h.emu.mention("C1", "U_ALICE", "a question over budget");
    await waitFor(() => done, { timeoutMs: 15_000 });
    await waitFor(() => session(h!, root)?.status === "active");
    expect(session(h, root)?.statuses).toEqual(["processing", "active"]);
    expect(h.emu.botReplies("C1", root.ts)).toEqual([]);
  });
});

describe("Slack agent sessions: a handed-over message declined by the replica that took it", () => {
  it("ends the session the process that handed it over left working", async () => {
    h = await startHarness(POST_UPDATE);
    const root = h.emu.state.addMessage({ channel: "C1", user: "U_ALICE", text: "a question handed over" });
    // The stopping process acknowledged it (its session working) and handed it over unanswered.
    h.emu.api.sessions.set(sessionKey("C1", root.ts), {
      channel: "C1",
      threadTs: root.ts,
      status: "processing",
      statuses: ["processing"],
      initiator: "U_ALICE",
    });
    const reply = h.adapter.replyFor!(`slack:T1:C1:${root.ts}`, {
      messages: [],
      retake: "",
      asker: "U_ALICE",
    });
    await reply.notice("You have used your daily budget.");
    await reply.declined!();
    await waitFor(() => session(h!, root)?.status === "active");
    expect(session(h, root)?.statuses).toEqual(["processing", "active"]);
    expect(h.emu.botReplies("C1", root.ts)).toEqual([]);
  });
});
