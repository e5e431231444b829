import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { joinParts, openFenceAtEnd } from "../../src/runtime/split.js";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../emulators/llm/index.js";
import { type EmuMessage, SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { type RunningApp, startWithEverything } from "../support/app-env.js";
import { isTitleRequest, lastUserText, toolResultsSinceUser } from "../support/llm-text.js";
import { untilQuiet } from "../support/quiet.js";
import { sharedTurn } from "../support/scenario.js";
import { switchboardSays } from "../support/slack-actions.js";

/** A 20,000+ character answer made of prose and code blocks. */
const LONG_ANSWER = (() => {
  const sections: string[] = [];
  for (let i = 0; sections.join("\n\n").length < 20_000; i++) {
    const code = Array.from({ length: 30 }, (_, k) => `  total += weigh(${i}, ${k}); // row ${k}`).join("\n");
    sections.push(
      `### Step ${i}\n\nFirst we weigh the rows of step ${i}. Then we add them up.\n\n\`\`\`js\n${code}\n\`\`\``,
    );
  }
  return sections.join("\n\n");
})();

const RATE_LIMITED_ANSWER = Array.from(
  { length: 15 },
  (_, i) => `Sentence ${i + 1} arrives while Slack pushes back.`,
).join(" ");

/** Long enough (about 3 s) for the thread's next message to wait behind it. */
const MEDIUM = Array.from({ length: 30 }, (_, i) => `step${i}`).join(" ");

/** A "gated" message's answer comes once the test opens the gate: its model request waits until then. */
let gate: Promise<void> = Promise.resolve();

/** What the person wrote, without the "[name] " the agent puts before it. */
const said = (req: RecordedRequest) => lastUserText(req).replace(/^\[[^\]]*\]\s*/, "");

function scenario(req: RecordedRequest): ScriptedTurn | Promise<ScriptedTurn> {
  if (isTitleRequest(req)) return { text: "Login issues" };
  const text = said(req);
  const step = toolResultsSinceUser(req).length;
  const word = text.split(/\s/)[0];
  switch (word) {
    case "stream":
      return {
        text: "Streaming in small pieces, one after the other, until the end.",
        chunkSize: 3,
        delayMs: 25,
      };
    case "long":
      return { text: LONG_ANSWER, chunkSize: 400 };
    case "limited":
      return { text: RATE_LIMITED_ANSWER, chunkSize: 20, delayMs: 80 };
    case "medium":
      return { text: MEDIUM, chunkSize: 6, delayMs: 100 };
    case "gated":
      return gate.then(() => ({ text: "The answer that waited." }));
    default:
      return sharedTurn(text, step);
  }
}

const CONFIG = `
llm:
  maxRetries: 0
slack:
  updateIntervalMs: 250
  suggestedPrompts:
    - title: Login issues
      message: Find open issues about login
`;

let llm: LlmEmulator;
let slack: SlackEmulator;
let running: RunningApp | undefined;

beforeAll(async () => {
  llm = await LlmEmulator.start({ responder: scenario });
  // Slack's limits, with its minute shortened to 6 s so the suite stays quick.
  slack = await SlackEmulator.start({ rateLimits: { speed: 10 } });
  running = await startWithEverything(CONFIG, { llm, slack });
}, 60_000);

afterAll(async () => {
  await running?.stop();
  await slack?.stop();
  await llm?.close();
});

const replies = (m: EmuMessage) => slack.botReplies(m.channel, m.ts).map((r) => r.text);
/** The turn is over: the :eyes: is gone and the bot wrote in the thread. */
const answered = (m: EmuMessage) =>
  waitFor(
    () =>
      slack.botReplies(m.channel, m.ts).length > 0 &&
      slack.api.calls.some((c) => c.method === "reactions.remove" && c.params.timestamp === m.ts) &&
      replies(m),
    { timeoutMs: 25_000 },
  );
const requestsFor = (text: string) => llm.requests.filter((r) => !isTitleRequest(r) && said(r) === text);
/** No turn or after-turn job runs, and nothing more reaches Slack. */
const settled = async () => {
  await running?.app.dispatcher.settled();
  await untilQuiet(slack.api.calls);
  await running?.app.dispatcher.settled();
};

describe("Switchboard in Slack (real app, emulated Slack and LLM)", () => {
  it("answers a mention with a streamed answer in the message's thread", async () => {
    const m = slack.mention("C1", "U_ALICE", "stream please");
    expect(await answered(m)).toEqual(["Streaming in small pieces, one after the other, until the end."]);
    expect(slack.botReplies("C1", m.ts)[0]?.edits.length).toBeGreaterThan(0);
  });

  it("answers a direct message in a thread under it", async () => {
    const m = slack.dm("U_BOB", "hello from a DM");
    expect(await answered(m)).toEqual(["You said: hello from a DM"]);
    expect(slack.botReplies(m.channel, m.ts)[0]?.thread_ts).toBe(m.ts);
  });

  it("sees the thread's earlier messages when mentioned in the middle of it", async () => {
    const root = slack.post("C1", "U_ALICE", "The deploy of build 731 failed with exit code 137");
    slack.post("C1", "U_BOB", "Probably the memory limit again", { threadTs: root.ts });
    const m = slack.mention("C1", "U_CAROL", "what happened here?", { threadTs: root.ts });
    await waitFor(() => slack.botReplies("C1", root.ts).length > 0, { timeoutMs: 20_000 });
    const sent = JSON.stringify(requestsFor("what happened here?")[0]?.messages);
    expect(sent).toContain("build 731 failed with exit code 137");
    expect(sent).toContain("bob: Probably the memory limit again");
    expect(m.thread_ts).toBe(root.ts);
  });

  it("continues a thread it is part of without a new mention", async () => {
    const m = slack.mention("C1", "U_ALICE", "first question");
    await answered(m);
    slack.post("C1", "U_ALICE", "second question", { threadTs: m.ts });
    // The second answer's message appears with its first words: wait for its whole text.
    const want = ["You said: first question", "You said: second question"];
    await waitFor(() => JSON.stringify(replies(m)) === JSON.stringify(want), { timeoutMs: 20_000 }).catch(
      () => undefined,
    );
    expect(replies(m)).toEqual(want);
    expect(JSON.stringify(requestsFor("second question")[0]?.messages)).toContain("You said: first question");
  });

  it("keeps one conversation in a Slack Connect thread where people of two organizations write", async () => {
    slack.externalUser("U_PARTNER", "T_PARTNER");
    const m = slack.mention("C1", "U_PARTNER", "partner question");
    await answered(m);
    // A colleague of the bot's own workspace follows up in the partner's thread.
    slack.post("C1", "U_ALICE", "our follow-up", { threadTs: m.ts });
    const want = ["You said: partner question", "You said: our follow-up"];
    await waitFor(() => JSON.stringify(replies(m)) === JSON.stringify(want), { timeoutMs: 20_000 }).catch(
      () => undefined,
    );
    expect(replies(m)).toEqual(want);
    expect(JSON.stringify(requestsFor("our follow-up")[0]?.messages)).toContain("You said: partner question");
  });

  it("offers suggested prompts in an assistant thread, shows a status while working and sets the title", async () => {
    const { channel, threadTs } = slack.startAssistantThread("U_DANA");
    await waitFor(() => slack.state.assistant.get(`${channel}:${threadTs}`)?.prompts.length);
    slack.dm("U_DANA", "find open issues about login", { threadTs });
    const thread = await waitFor(
      () => {
        const t = slack.state.assistant.get(`${channel}:${threadTs}`);
        return t && t.titles.length > 0 && t;
      },
      { timeoutMs: 20_000 },
    );
    expect(thread.prompts[0]?.prompts).toEqual([
      { title: "Login issues", message: "Find open issues about login" },
    ]);
    expect(thread.statuses[0]).toBe("is thinking…");
    expect(thread.statuses.at(-1)).toBe("");
    expect(thread.titles).toEqual(["Login issues"]);
    expect(slack.botReplies(channel, threadTs).map((r) => r.text)).toEqual([
      "You said: find open issues about login",
    ]);
  });

  it("shows an assistant thread's status again when the answer to a message that waited behind the thread's answer starts", async () => {
    const { channel, threadTs } = slack.startAssistantThread("U_FRANK");
    await waitFor(() => slack.state.assistant.get(`${channel}:${threadTs}`)?.prompts.length);
    const thread = () => slack.state.assistant.get(`${channel}:${threadTs}`);
    const text = () =>
      slack
        .botReplies(channel, threadTs)
        .map((r) => r.text)
        .join("\n");
    let open: () => void = () => undefined;
    gate = new Promise((resolve) => {
      open = resolve;
    });
    slack.dm("U_FRANK", "medium answer first", { threadTs });
    await waitFor(() => text().includes("step3"), { timeoutMs: 10_000 });
    // Acknowledged while the first answer is written, with the thread's one status.
    slack.dm("U_FRANK", "gated answer next", { threadTs });
    await waitFor(() => thread()?.statuses.length === 2);
    expect(text()).not.toContain("step29");
    // The first answer's end took the status away; the second's model is thinking now.
    try {
      await waitFor(() => requestsFor("gated answer next").length === 1, { timeoutMs: 15_000 });
      expect(text()).toContain("step29");
      await waitFor(() => thread()?.status === "is thinking…", { timeoutMs: 3_000 });
    } finally {
      open();
    }
    await waitFor(() => text().includes("The answer that waited."), { timeoutMs: 10_000 });
    await settled();
    // Set once more for the second answer only: the first answer's start made no extra call.
    expect(thread()?.statuses).toEqual(["is thinking…", "is thinking…", "", "is thinking…", ""]);
    expect(thread()?.status).toBe("");
  }, 40_000);

  it("offers suggested prompts in the Messages tab when a person opens it (an agent app's way into its DM)", async () => {
    const dm = slack.openMessagesTab("U_GRACE");
    await waitFor(() => slack.state.tabPrompts.get(dm)?.length);
    expect(slack.state.tabPrompts.get(dm)).toEqual([
      { prompts: [{ title: "Login issues", message: "Find open issues about login" }] },
    ]);
  });

  it("answers each slash subcommand, informational ones only to the asker", async () => {
    const asked = async (text: string) => {
      const before = slack.state.ephemerals.length;
      slack.slash("/switchboard", text, "U_ERIN", "C1");
      return (
        await waitFor(() => slack.state.ephemerals.length > before && slack.state.ephemerals.at(-1), {
          timeoutMs: 15_000,
        })
      ).text;
    };
    expect(await asked("help")).toContain("/switchboard ask");
    expect(await asked("tools")).toMatch(/everything \(stdio\): connected, \d+ tools/);
    expect(await asked("model")).toContain("gpt-4o-mini");
    // Thread commands act on the asker's latest thread with the bot; without one they say so.
    expect(await asked("new")).toContain("I don't know which thread you mean");
    expect(await answered(slack.mention("C1", "U_ERIN", "hello there"))).toEqual(["You said: hello there"]);
    expect(await asked("title")).toBe("New title: Login issues");
    expect(await asked("new")).toContain("Started a new conversation");
    // The thread was just emptied: nothing to fold, nothing to title.
    expect(await asked("compact")).toBe("Nothing to compress yet: the conversation is short.");
    expect(await asked("title")).toBe("There is nothing to title yet: ask me something first.");
    slack.slash("/switchboard", "ask what is 2+2?", "U_ERIN", "C1");
    const question = await waitFor(() =>
      slack.state.history("C1").find((m) => m.text.includes("asked: what is 2+2?")),
    );
    expect(await answered(question)).toEqual(["You said: what is 2+2?"]);
    expect(slack.state.ephemerals.every((e) => e.user === "U_ERIN")).toBe(true);
  });

  it("uploads the image a tool returned into the thread", async () => {
    const m = slack.mention("C1", "U_ALICE", "image please");
    const file = await waitFor(() => slack.botReplies("C1", m.ts).flatMap((r) => r.files)[0], {
      timeoutMs: 25_000,
    });
    expect(file.mimetype).toBe("image/png");
    expect(file.bytes.byteLength).toBeGreaterThan(0);
    await waitFor(() => replies(m).includes("Here is the image."));
  });

  it("answers once when Slack delivers the same mention three times", async () => {
    const m = slack.mention("C1", "U_ALICE", "only once please", { times: 3 });
    expect(await answered(m)).toEqual(["You said: only once please"]);
    await waitFor(
      () => slack.delivery.deliveries.filter((d) => d.acked).length === slack.delivery.deliveries.length,
    );
    // A copy that got past the dedupe would queue behind the first answer: wait until none runs.
    await settled();
    expect(requestsFor("only once please")).toHaveLength(1);
    expect(replies(m)).toHaveLength(1);
  });

  it("delivers the complete final text when every second write is answered with 429", async () => {
    slack.rates.configure({ failEveryNthWrite: 2, forcedRetryAfter: 1 });
    try {
      const m = slack.mention("C1", "U_ALICE", "limited please");
      expect(await answered(m)).toEqual([RATE_LIMITED_ANSWER]);
      expect(slack.rates.limited.some((l) => l.forced)).toBe(true);
    } finally {
      slack.rates.configure({ failEveryNthWrite: 0 });
    }
  });

  it("splits a 20,000-character answer with code blocks into several messages, fences intact, text identical", async () => {
    const m = slack.mention("C1", "U_ALICE", "long answer please");
    const parts = await waitFor(
      () => {
        const r = replies(m);
        return r.length > 1 && joinParts(r) === LONG_ANSWER && r;
      },
      { timeoutMs: 60_000 },
    );
    expect(parts.length).toBeGreaterThanOrEqual(5);
    for (const p of parts) expect(openFenceAtEnd(p)).toBeNull();
  }, 70_000);

  it("ignores its own messages and edits", async () => {
    await settled();
    const requestsBefore = llm.requests.length;
    const deliveriesBefore = slack.delivery.deliveries.length;
    const m = slack.mention("C1", "U_ALICE", "stream for the echo check");
    await answered(m);
    slack.post("C1", "U_ALICE", "after the echo", { threadTs: m.ts });
    await waitFor(() => replies(m).length === 2, { timeoutMs: 20_000 });
    await settled();
    const own = slack.delivery.deliveries.slice(deliveriesBefore).filter((d) => {
      const e = d.payload.event as { user?: string; subtype?: string } | undefined;
      return e?.user === "U_BOT" || e?.subtype === "message_changed";
    });
    // The streamed answer came back as a post and several edits; none was taken as a question.
    expect(own.length).toBeGreaterThan(2);
    const asked = llm.requests.slice(requestsBefore).filter((r) => !isTitleRequest(r));
    expect(asked.map(said)).toEqual(["stream for the echo check", "after the echo"]);
  });

  it("asks to be invited when /switchboard ask runs in a channel it is not in, and answers there once invited", async () => {
    slack.state.addChannel("C9", "not-invited", { botMember: false });
    const told = await switchboardSays(slack, "ask what about C9?", "U_ALICE", "C9");
    expect(told).toBe(
      "I cannot post in this channel: I am not in it. Invite me with `/invite @Switchboard`, then ask again.",
    );
    expect(
      slack.api.calls.filter((c) => c.method === "chat.postMessage" && c.params.channel === "C9"),
    ).toEqual([expect.objectContaining({ ok: false, error: "not_in_channel" })]);
    expect(requestsFor("what about C9?")).toEqual([]);
    slack.state.channels.get("C9")!.botMember = true;
    slack.slash("/switchboard", "ask what about C9?", "U_ALICE", "C9");
    const question = await waitFor(() => slack.state.history("C9").find((m) => m.user === "U_BOT"));
    expect(question.text).toBe("<@U_ALICE> asked: what about C9?");
    expect(await answered(question)).toEqual(["You said: what about C9?"]);
  });

  it("ends with a clear sentence when the model fails", async () => {
    const m = slack.mention("C1", "U_ALICE", "fail now");
    expect(await answered(m)).toEqual([
      "The language model service is not answering properly right now (HTTP 500); I tried once. Please try again in a few minutes.",
    ]);
  });
});
