/**
 * Slack's agent sessions through the real app and @slack/bolt against the emulator: each
 * answered thread is a session, `processing` while the answer is written and `active`
 * after, titled with the thread's title; Slack's own stop button (`agent_session_stopped`)
 * stops the answer like ours, for the same people; an app Slack does not take as an agent
 * answers as before and stops asking after the first refusal.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../emulators/llm/index.js";
import { SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { clickAction } from "../emulators/slack/interactive.js";
import { sessionKey } from "../emulators/slack/web-api-agents.js";
import { type RunningApp, startWithEverything } from "../support/app-env.js";
import { isTitleRequest, lastUserText, toolResultsSinceUser } from "../support/llm-text.js";
import { untilQuiet } from "../support/quiet.js";

const SLOW = Array.from({ length: 120 }, (_, i) => `word${i}`).join(" ");
/** Long enough (about 3 s) for the thread's next message to wait behind it. */
const MEDIUM = Array.from({ length: 30 }, (_, i) => `step${i}`).join(" ");

function responder(req: RecordedRequest): ScriptedTurn {
  if (isTitleRequest(req)) return { text: "Weekly numbers" };
  if (toolResultsSinceUser(req).length > 0) return { text: "The logging changed." };
  if (lastUserText(req).includes("logging toggle")) {
    return {
      toolCalls: [{ name: "everything__toggle-simulated-logging", arguments: {} }],
    };
  }
  if (lastUserText(req).includes("slow")) return { text: SLOW, chunkSize: 6, delayMs: 100 };
  if (lastUserText(req).includes("medium")) return { text: MEDIUM, chunkSize: 6, delayMs: 100 };
  return { text: "Quick answer." };
}

describe("Slack agent sessions", () => {
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let running: RunningApp;

  beforeAll(async () => {
    llm = await LlmEmulator.start({ responder });
    slack = await SlackEmulator.start();
    slack.state.userGroups.set("S_OPS", ["U_CAROL"]);
    running = await startWithEverything(
      "llm:\n  maxRetries: 0\nslack:\n  updateIntervalMs: 250\napprovals:\n  approvers:\n    - { platform: slack, slackUserGroups: [S_OPS] }\n",
      { llm, slack },
    );
  }, 60_000);

  afterAll(async () => {
    await running?.stop();
    await slack?.stop();
    await llm?.close();
  });

  const session = (ts: string) => slack.api.sessions.get(sessionKey("C1", ts));

  it("is processing while the answer is written, active after, and carries the thread's title", async () => {
    const m = slack.mention("C1", "U_ALICE", "a quick one");
    await waitFor(() => slack.botReplies("C1", m.ts).some((r) => r.text === "Quick answer."));
    await running.app.dispatcher.settled();
    await waitFor(() => session(m.ts)?.title === "Weekly numbers");
    expect(session(m.ts)).toMatchObject({
      status: "active",
      initiator: "U_ALICE",
      statuses: ["processing", "active"],
    });
  });

  it("stops the answer when the asker presses Slack's stop, and moves the session on", async () => {
    const m = slack.mention("C1", "U_ALICE", "a slow answer please");
    await waitFor(() => session(m.ts)?.status === "processing");
    const answer = () => slack.botReplies("C1", m.ts)[0];
    await waitFor(() => (answer()?.text.length ?? 0) > 0 || (answer()?.stream?.chunks.length ?? 0) > 0);
    // Slack's stop button is on the session: no private one besides it, also once the
    // answer has taken longer than the 2 s after which the private one would come.
    await waitFor(() => answer()?.text.includes("word40"), { timeoutMs: 10_000 });
    expect(slack.state.ephemerals.filter((e) => e.thread_ts === m.ts)).toEqual([]);

    slack.stopAgentSession("U_ALICE", "C1", m.ts);
    await waitFor(() => llm.requests.find((r) => lastUserText(r).includes("a slow answer"))?.abandoned, {
      timeoutMs: 5_000,
    });
    await running.app.dispatcher.settled();
    await untilQuiet(slack.api.calls);
    const text = slack
      .botReplies("C1", m.ts)
      .map((r) => r.text)
      .join("\n");
    expect(text).toContain("Stopped by alice.");
    expect(text).not.toContain("word119");
    expect(session(m.ts)?.status).toBe("active");
  });

  it("tells someone else who presses Slack's stop that they may not, and the answer goes on", async () => {
    const m = slack.mention("C1", "U_ALICE", "a medium answer please");
    await waitFor(() => session(m.ts)?.status === "processing");
    const text = () =>
      slack
        .botReplies("C1", m.ts)
        .map((r) => r.text)
        .join("\n");
    await waitFor(() => text().includes("step3"), { timeoutMs: 10_000 });

    slack.stopAgentSession("U_BOB", "C1", m.ts);
    await waitFor(() => slack.state.ephemerals.find((e) => e.user === "U_BOB" && e.thread_ts === m.ts));
    expect(slack.state.ephemerals.filter((e) => e.user === "U_BOB").map((e) => e.text)).toEqual([
      "Only alice or an approver can stop this answer.",
    ]);
    await waitFor(() => text().includes("step29"), { timeoutMs: 10_000 });
    await running.app.dispatcher.settled();
    await untilQuiet(slack.api.calls);
    expect(text()).not.toContain("Stopped");
    // The refused press left the session working; the answer's end moved it on.
    expect(session(m.ts)?.statuses).toEqual(["processing", "active"]);
  });

  it("keeps Slack's stop for the asker after someone else's press was refused, and stops the answer at theirs", async () => {
    const m = slack.mention("C1", "U_ALICE", "a slow answer, whoever presses stop");
    await waitFor(() => session(m.ts)?.status === "processing");
    const text = () =>
      slack
        .botReplies("C1", m.ts)
        .map((r) => r.text)
        .join("\n");
    const told = (user: string) =>
      slack.state.ephemerals.filter((e) => e.user === user && e.thread_ts === m.ts).map((e) => e.text);
    await waitFor(() => text().includes("word10"), { timeoutMs: 10_000 });

    slack.stopAgentSession("U_BOB", "C1", m.ts);
    await waitFor(() => told("U_BOB").length > 0);
    expect(told("U_BOB")).toEqual(["Only alice or an approver can stop this answer."]);
    // The answer goes on, and so does its session: Slack's stop button stays for the asker,
    // also past the 2 s after which a private Stop would come where there is none.
    await waitFor(() => text().includes("word40"), { timeoutMs: 10_000 });
    expect(session(m.ts)?.status).toBe("processing");
    expect(told("U_ALICE")).toEqual([]);

    slack.stopAgentSession("U_ALICE", "C1", m.ts);
    await waitFor(
      () => llm.requests.find((r) => lastUserText(r).includes("whoever presses stop"))?.abandoned,
      {
        timeoutMs: 5_000,
      },
    );
    await running.app.dispatcher.settled();
    await untilQuiet(slack.api.calls);
    expect(text()).toContain("Stopped by alice.");
    expect(text()).not.toContain("word119");
    expect(session(m.ts)?.statuses).toEqual(["processing", "active"]);
  }, 30_000);

  it("gives a message that waited behind the thread's answer its own working session, with Slack's stop, once its answer starts", async () => {
    const m = slack.mention("C1", "U_ALICE", "a medium answer first");
    await waitFor(() => session(m.ts)?.status === "processing");
    const replies = () => slack.botReplies("C1", m.ts).map((r) => r.text);
    await waitFor(() => replies().join("\n").includes("step3"), { timeoutMs: 10_000 });
    // Written while the first answer is: it waits for the thread, acknowledged meanwhile.
    const next = slack.post("C1", "U_ALICE", "then a slow answer please", { threadTs: m.ts });
    await waitFor(() =>
      slack.api.calls.find((c) => c.method === "reactions.add" && c.params.timestamp === next.ts),
    );
    expect(replies().join("\n")).not.toContain("step29");
    await waitFor(() => replies().join("\n").includes("step29"), { timeoutMs: 10_000 });
    // Its answer has started: the session is working again, with Slack's stop button.
    await waitFor(
      () => {
        expect(session(m.ts)?.statuses).toEqual(["processing", "active", "processing"]);
        return true;
      },
      { timeoutMs: 5_000 },
    );
    // Past the 2 s after which a private Stop would come where Slack shows no stop button.
    await waitFor(() => replies().join("\n").includes("word40"), { timeoutMs: 10_000 });
    expect(slack.state.ephemerals.filter((e) => e.thread_ts === m.ts)).toEqual([]);

    slack.stopAgentSession("U_ALICE", "C1", m.ts);
    await waitFor(() => llm.requests.find((r) => lastUserText(r).includes("then a slow answer"))?.abandoned, {
      timeoutMs: 5_000,
    });
    await running.app.dispatcher.settled();
    await untilQuiet(slack.api.calls);
    const text = replies().join("\n");
    expect(text).toContain("Stopped by alice.");
    expect(text).not.toContain("word119");
    expect(session(m.ts)?.statuses).toEqual(["processing", "active", "processing", "active"]);
  }, 30_000);

  it("lets a member of an approvers' user group stop someone else's answer with Slack's stop", async () => {
    const lookups = () => slack.api.calls.filter((c) => c.method === "usergroups.users.list");
    const looked = lookups().length;
    const m = slack.mention("C1", "U_ALICE", "another slow answer please");
    await waitFor(() => session(m.ts)?.status === "processing");
    const answer = () => slack.botReplies("C1", m.ts)[0];
    await waitFor(() => (answer()?.text.length ?? 0) > 0 || (answer()?.stream?.chunks.length ?? 0) > 0);

    slack.stopAgentSession("U_CAROL", "C1", m.ts);
    await waitFor(
      () => llm.requests.find((r) => lastUserText(r).includes("another slow answer"))?.abandoned,
      {
        timeoutMs: 5_000,
      },
    );
    await running.app.dispatcher.settled();
    await untilQuiet(slack.api.calls);
    const text = slack
      .botReplies("C1", m.ts)
      .map((r) => r.text)
      .join("\n");
    expect(text).toContain("Stopped by carol.");
    expect(slack.state.ephemerals.filter((e) => e.user === "U_CAROL")).toEqual([]);
    // A group's members are read once a minute at most: an earlier Stop may have read S_OPS.
    const since = lookups()
      .slice(looked)
      .map((c) => c.params.usergroup);
    expect(since.length).toBeLessThanOrEqual(1);
    expect(since.every((g) => g === "S_OPS")).toBe(true);
  });

  it("is suspended while it waits for an approval (toggle-simulated-logging is not read-only), and processing again once it goes on", async () => {
    const m = slack.mention("C1", "U_ALICE", "run the logging toggle");
    const question = await waitFor(() =>
      slack.botReplies("C1", m.ts).find((r) => JSON.stringify(r.blocks ?? []).includes(":approve")),
    );
    await waitFor(() => session(m.ts)?.status === "suspended");
    const approve = (
      (question.blocks ?? []) as Array<{ elements?: Array<{ action_id: string; value: string }> }>
    )
      .flatMap((b) => b.elements ?? [])
      .find((e) => e.value === "approve")!;
    clickAction(slack, {
      user: "U_ALICE",
      channel: "C1",
      messageTs: question.ts,
      actionId: approve.action_id,
      value: "approve",
    });
    await waitFor(() => slack.botReplies("C1", m.ts).some((r) => r.text.includes("The logging changed.")), {
      timeoutMs: 15_000,
    });
    await running.app.dispatcher.settled();
    await untilQuiet(slack.api.calls);
    // Only the latest status of a thread is sent, so a quick resume may skip its `processing`.
    const statuses = session(m.ts)?.statuses ?? [];
    expect(statuses.slice(0, 2)).toEqual(["processing", "suspended"]);
    expect(statuses.at(-1)).toBe("active");
  }, 30_000);

  it("offers the asker the private Stop button where this thread's session could not start (its limit spent)", async () => {
    // Every setStatus answered with a 429 (Retry-After 1 s): the session's start waits past
    // its 3 s and is dropped, while Slack has not refused sessions.
    slack.rates.configure({ speed: 60, perMinute: { "agents.sessions.setStatus": 0 } });
    try {
      const m = slack.mention("C1", "U_ALICE", "a slow answer without its session");
      const offer = await waitFor(
        () => slack.state.ephemerals.find((e) => e.user === "U_ALICE" && e.thread_ts === m.ts),
        { timeoutMs: 10_000 },
      );
      expect(session(m.ts)).toBeUndefined();
      const stop = ((offer.blocks ?? []) as Array<{ elements?: Array<{ action_id: string; value: string }> }>)
        .flatMap((b) => b.elements ?? [])
        .find((e) => e.value === "stop")!;
      clickAction(slack, {
        user: "U_ALICE",
        channel: "C1",
        messageTs: m.ts,
        actionId: stop.action_id,
        value: "stop",
      });
      const text = () =>
        slack
          .botReplies("C1", m.ts)
          .map((r) => r.text)
          .join("\n");
      await waitFor(() => text().includes("Stopped by alice."), { timeoutMs: 10_000 });
      await running.app.dispatcher.settled();
      expect(text()).not.toContain("word119");
    } finally {
      slack.rates.configure({ speed: 1, perMinute: {} });
    }
  }, 30_000);

  it("answers as before where Slack refuses sessions, and asks only once", async () => {
    slack.api.refuse("agents.sessions.setStatus", "missing_scope");
    const asked = llm.requests.length;
    try {
      const first = slack.mention("C1", "U_ALICE", "a quick one");
      await waitFor(() => slack.botReplies("C1", first.ts).some((r) => r.text === "Quick answer."));
      const second = slack.mention("C1", "U_BOB", "a quick one");
      await waitFor(() => slack.botReplies("C1", second.ts).some((r) => r.text === "Quick answer."));
      await running.app.dispatcher.settled();
      const statuses = slack.api.calls.filter(
        (c) =>
          c.method === "agents.sessions.setStatus" &&
          [first.ts, second.ts].includes(String(c.params.thread_ts)),
      );
      expect(statuses.map((c) => c.error)).toEqual(["missing_scope"]);
      // Without a session a channel thread shows no title: the model is asked for the answers only.
      const since = llm.requests.slice(asked);
      expect(since.filter(isTitleRequest)).toEqual([]);
      expect(since).toHaveLength(2);
    } finally {
      slack.api.allow("agents.sessions.setStatus");
    }
  });
});
