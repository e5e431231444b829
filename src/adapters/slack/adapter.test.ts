import { afterEach, describe, expect, it, vi } from "vitest";
import {
  type Harness,
  type ScriptedRunner,
  startHarness,
  streamText,
} from "../../../test/emulators/slack/adapter-harness.js";
import { BOT_USER_ID, type EmuMessage, waitFor } from "../../../test/emulators/slack/index.js";
import { NOTHING_ASKED } from "../../runtime/intake.js";
import { SharedBudgets } from "../../runtime/scheduler/shared-budgets.js";
import { joinParts, openFenceAtEnd } from "../../runtime/split.js";
import { HISTORY_PAGE_SIZE, HISTORY_PAGES } from "./events.js";
import { toMrkdwn } from "./mrkdwn.js";
import { SLACK_MESSAGE_LIMIT } from "./reply.js";
import { HISTORY_FILE_LOOKUPS, NOT_LOOKED_UP } from "./thread-history.js";
import { slackWritePolicy } from "./write-policy.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const answered = (runner: ScriptedRunner, n = 1) => waitFor(() => runner.inbounds.length >= n);
const finalText = (h: Harness, channel: string, ts: string) =>
  h.emu.botReplies(channel, ts).map((m) => m.text);

/** Resolves once the runner has finished the turn for `ts` and the reaction is gone. */
async function settled(h: Harness, channel: string, root: EmuMessage): Promise<void> {
  await waitFor(() => {
    const m = h.emu.state.find(channel, root.ts);
    const reacted = h.emu.api.calls.some(
      (c) => c.method === "reactions.remove" && c.params.timestamp === root.ts,
    );
    return m && reacted && m.reactions.size === 0;
  });
}

describe("Slack adapter: where it answers", () => {
  it("answers a mention in that message's thread, streamed as edits, with :eyes: while working", async () => {
    h = await startHarness();
    h.runner.script = streamText("One. Two. Three. Four. Five.", 5, 300);
    const m = h.emu.mention("C1", "U_ALICE", "count to five");
    await settled(h, "C1", m);
    expect(finalText(h, "C1", m.ts)).toEqual(["One. Two. Three. Four. Five."]);
    const reply = h.emu.botReplies("C1", m.ts)[0];
    expect(reply?.edits.length).toBeGreaterThan(0);
    expect(reply?.thread_ts).toBe(m.ts);
    const added = h.emu.api.calls.find((c) => c.method === "reactions.add");
    expect(added?.params).toMatchObject({ channel: "C1", timestamp: m.ts, name: "eyes" });
    const inbound = h.runner.inbounds[0];
    expect(inbound?.key).toBe(`slack:T1:C1:${m.ts}`);
    expect(inbound?.text).toBe("count to five");
    expect(inbound?.user).toEqual({ id: "U_ALICE", name: "alice" });
  });

  it("answers a top-level DM in a thread under it, one session per DM thread", async () => {
    h = await startHarness();
    const first = h.emu.dm("U_ALICE", "hi");
    await waitFor(() => finalText(h!, first.channel, first.ts).length === 1);
    const second = h.emu.dm("U_ALICE", "another topic");
    await waitFor(() => finalText(h!, second.channel, second.ts).length === 1);
    const bob = h.emu.dm("U_BOB", "hi");
    await waitFor(() => finalText(h!, bob.channel, bob.ts).length === 1);
    const keys = h.runner.inbounds.map((i) => i.key);
    expect(new Set(keys).size).toBe(3);
    expect(keys[0]).toBe(`slack:T1:${first.channel}:${first.ts}`);
  });

  it("gives a mention in the middle of a thread the thread's earlier messages, with author names", async () => {
    h = await startHarness();
    const root = h.emu.post("C1", "U_ALICE", "The build fails on <https://ci.example/42|job 42>");
    h.emu.post("C1", "U_BOB", "Same here since &lt;yesterday&gt;", { threadTs: root.ts });
    h.emu.mention("C1", "U_CAROL", "what is wrong?", { threadTs: root.ts });
    await answered(h.runner);
    await waitFor(() => h!.runner.histories.length === 1);
    expect(h.runner.histories[0]).toEqual([
      { author: "alice", fromBot: false, text: "The build fails on job 42 (https://ci.example/42)" },
      { author: "bob", fromBot: false, text: "Same here since <yesterday>" },
    ]);
    expect(h.runner.inbounds[0]?.key).toBe(`slack:T1:C1:${root.ts}`);
  });

  it("names the files another organization shared earlier in the thread, as files.info describes them", async () => {
    h = await startHarness();
    h.emu.externalUser("U_EXT", "T_OTHER");
    const file = (name: string) => ({ name, mimetype: "text/plain", bytes: Buffer.from("launch on friday") });
    const root = h.emu.post("C1", "U_ALICE", "Our plan, and theirs?", { files: [file("ours.txt")] });
    h.emu.post("C1", "U_EXT", "Here is ours", { threadTs: root.ts, files: [file("theirs.txt")] });
    const gone = h.emu.post("C1", "U_EXT", "And the old one", {
      threadTs: root.ts,
      files: [file("old.txt")],
    });
    // Unshared since: Slack lists it as a stub, and files.info no longer knows it.
    const goneId = gone.files[0]?.id ?? "";
    h.emu.state.files.delete(goneId);
    h.emu.mention("C1", "U_CAROL", "do they match?", { threadTs: root.ts });
    await waitFor(() => h!.runner.histories.length === 1);
    // Who wrote each message is read within users.info's short wait, which a busy machine can outlast: this test is about the files.
    expect(h.runner.histories[0]?.map(({ fromBot, text }) => ({ fromBot, text }))).toEqual([
      { fromBot: false, text: "Our plan, and theirs? [file: ours.txt]" },
      { fromBot: false, text: "Here is ours [file: theirs.txt]" },
      {
        fromBot: false,
        text: `And the old one [file: ${goneId}; Slack would not say what this file is (file_not_found), so it could not be read]`,
      },
    ]);
    expect(h.emu.api.calls.filter((c) => c.method === "files.info")).toHaveLength(2);
  });

  it("tells the asker alone what to ask after a bare mention, where they see it, and asks the model nothing", async () => {
    h = await startHarness();
    // The emulator sends a mention twice, as app_mention and as message, as Slack does.
    const bare = h.emu.mention("C1", "U_ALICE", "");
    const note = await waitFor(() => h!.emu.state.ephemerals.find((e) => e.via === "chat.postEphemeral"));
    // In the channel: under the mention, which has no replies, Slack would show it nowhere.
    expect(note).toMatchObject({
      channel: "C1",
      user: "U_ALICE",
      text: toMrkdwn(NOTHING_ASKED),
      shown: true,
    });
    expect(note.thread_ts).toBeUndefined();
    // The second copy of the mention, as a message, asks nothing either and tells nothing twice.
    const later = h.emu.mention("C1", "U_ALICE", "and now a question");
    await settled(h, "C1", later);
    expect(h.runner.inbounds.map((i) => i.text)).toEqual(["and now a question"]);
    expect(h.emu.state.ephemerals).toHaveLength(1);
    expect(h.emu.botReplies("C1", bare.ts)).toEqual([]);
    expect(
      h.emu.api.calls.filter((c) => c.method === "reactions.add").map((c) => c.params.timestamp),
    ).toEqual([later.ts]);
  });

  it("looks up only the latest 20 files another organization shared earlier in the thread, and names the older ones by id", async () => {
    h = await startHarness();
    h.emu.externalUser("U_EXT", "T_OTHER");
    const file = (n: number) => ({
      name: `part${n}.txt`,
      mimetype: "text/plain",
      bytes: Buffer.from(`part ${n}`),
    });
    const root = h.emu.post("C1", "U_ALICE", "All the parts, please");
    const batches = Array.from({ length: 5 }, (_, b) =>
      h!.emu.post("C1", "U_EXT", `batch ${b}`, {
        threadTs: root.ts,
        files: Array.from({ length: 5 }, (_, i) => file(b * 5 + i)),
      }),
    );
    h.emu.mention("C1", "U_CAROL", "are they all here?", { threadTs: root.ts });
    await waitFor(() => h!.runner.histories.length === 1);
    const shown = (m: EmuMessage, label: (f: EmuMessage["files"][number]) => string) =>
      `${m.text} ${m.files.map((f) => `[file: ${label(f)}]`).join(" ")}`;
    // Who wrote each message is read within users.info's short wait, which a busy machine can outlast: this test is about the files.
    expect(h.runner.histories[0]?.map(({ fromBot, text }) => ({ fromBot, text }))).toEqual([
      { fromBot: false, text: "All the parts, please" },
      { fromBot: false, text: shown(batches[0]!, (f) => `${f.id}; ${NOT_LOOKED_UP}`) },
      ...batches.slice(1).map((m) => ({ fromBot: false, text: shown(m, (f) => f.name) })),
    ]);
    const asked = h.emu.api.calls.filter((c) => c.method === "files.info").map((c) => c.params.file);
    expect(asked).toHaveLength(HISTORY_FILE_LOOKUPS);
    expect(new Set(asked)).toEqual(new Set(batches.slice(1).flatMap((m) => m.files.map((f) => f.id))));
  });

  it("reads at most 5 pages of a very long thread's history", async () => {
    h = await startHarness();
    const root = h.emu.post("C1", "U_ALICE", "message 0");
    // Written straight into the emulator: 1,199 deliveries would only slow the test.
    h.emu.state.user("U_BOB");
    for (let i = 1; i < 1_200; i++) {
      h.emu.state.addMessage({ channel: "C1", user: "U_BOB", text: `message ${i}`, thread_ts: root.ts });
    }
    h.emu.mention("C1", "U_CAROL", "sum it up", { threadTs: root.ts });
    await waitFor(() => h!.runner.histories.length === 1);
    const reads = h.emu.api.calls.filter((c) => c.method === "conversations.replies");
    expect(reads).toHaveLength(HISTORY_PAGES);
    expect(h.runner.histories[0]).toHaveLength(HISTORY_PAGES * HISTORY_PAGE_SIZE);
    expect(h.runner.histories[0]?.[0]).toMatchObject({ author: "alice", text: "message 0" });
  });

  it("continues a thread it answered without a new mention, and stays out of other threads", async () => {
    h = await startHarness();
    const m = h.emu.mention("C1", "U_ALICE", "start");
    await waitFor(() => finalText(h!, "C1", m.ts).length === 1);
    h.emu.post("C1", "U_ALICE", "and a follow-up", { threadTs: m.ts });
    await answered(h.runner, 2);
    expect(h.runner.inbounds[1]?.key).toBe(h.runner.inbounds[0]?.key);
    expect(h.runner.inbounds[1]?.history).toBeUndefined();
    const other = h.emu.post("C1", "U_BOB", "unrelated root");
    h.emu.post("C1", "U_BOB", "unrelated reply", { threadTs: other.ts });
    h.emu.post("C1", "U_BOB", "not for the bot");
    // A later mention proves the earlier messages were processed (events arrive in order).
    h.emu.mention("C1", "U_ALICE", "marker");
    await answered(h.runner, 3);
    expect(h.runner.inbounds.map((i) => i.text)).toEqual(["start", "and a follow-up", "marker"]);
  });

  it("ignores its own messages and edits, and other bots unless allowed", async () => {
    h = await startHarness();
    const m = h.emu.mention("C1", "U_ALICE", "hello");
    await settled(h, "C1", m);
    h.emu.botPost("C1", `<@${BOT_USER_ID}> I am another bot`);
    h.emu.mention("C1", "U_ALICE", "marker");
    await answered(h.runner, 2);
    // Echoes of the bot's own post and edits were delivered and acked, and none became a turn.
    const echoes = h.emu.delivery.deliveries.filter(
      (d) =>
        (d.payload.event as { user?: string; message?: unknown }).user === BOT_USER_ID ||
        (d.payload.event as { subtype?: string }).subtype === "message_changed",
    );
    expect(echoes.length).toBeGreaterThan(0);
    expect(h.runner.inbounds.map((i) => i.text)).toEqual(["hello", "marker"]);
  });

  it("answers other bots when slack.allowBots is on", async () => {
    h = await startHarness({ config: { slack: { allowBots: true } } });
    const m = h.emu.botPost("C1", `<@${BOT_USER_ID}> status report please`);
    await answered(h.runner);
    expect(h.runner.inbounds[0]?.user.id).toBe("U_OTHERBOT");
    await waitFor(() => finalText(h!, "C1", m.ts).length === 1);
  });

  it("keeps agent sessions for the next thread when Slack refuses one to a bot's thread", async () => {
    h = await startHarness({ config: { slack: { allowBots: true } } });
    const statuses = () => h!.emu.api.calls.filter((c) => c.method === "agents.sessions.setStatus");
    const bot = h.emu.botPost("C1", `<@${BOT_USER_ID}> status report please`);
    await waitFor(() => statuses().find((c) => c.params.thread_ts === bot.ts && c.error));
    await waitFor(() => finalText(h!, "C1", bot.ts).length === 1);
    const m = h.emu.mention("C1", "U_ALICE", "hello");
    await settled(h, "C1", m);
    // The scripted answer ends without saying it answered: its session is left suspended.
    await waitFor(() => h!.emu.api.sessions.get(`C1:${m.ts}`)?.status === "suspended");
    expect(statuses().map((c) => [c.params.thread_ts, c.params.status, c.error])).toEqual([
      [bot.ts, "processing", "user_not_in_channel"],
      [m.ts, "processing", undefined],
      [m.ts, "suspended", undefined],
    ]);
  });
});

describe("Slack adapter: a status line in a channel thread", () => {
  it("takes a status-only message away, never updating it to nothing, when the answer so far is line breaks alone", async () => {
    h = await startHarness({ config: { slack: { nativeStreaming: false } } });
    h.runner.script = async (inbound) => {
      await inbound.reply.status("Calling everything__echo…");
      const sink = inbound.reply.stream();
      await new Promise((r) => setTimeout(r, 400));
      sink.write("\n\n");
      await sink.finish();
    };
    const m = h.emu.mention("C1", "U_ALICE", "a question");
    await settled(h, "C1", m);
    await waitFor(() => h!.emu.api.calls.some((c) => c.method === "chat.delete"));
    // Slack refuses an update to whitespace alone (no_text): the message goes, as for an empty answer.
    expect(h.emu.api.calls.filter((c) => c.method === "chat.update" && !c.ok)).toEqual([]);
    expect(finalText(h, "C1", m.ts)).toEqual([]);
  });
});

describe("Slack adapter: a reply rebuilt from its record", () => {
  it("tells its asker alone when the record names them, and the thread when it does not", async () => {
    h = await startHarness();
    const root = h.emu.post("C1", "U_ALICE", "a question handed over by a stopping replica");
    const key = `slack:T1:C1:${root.ts}`;
    await h.adapter.replyFor?.(key, { messages: [], asker: "U_ALICE" }).notice("Only for alice.");
    await h.adapter.replyFor?.(key, { messages: [] }).notice("For the thread.");
    const ephemeral = h.emu.api.calls.filter((c) => c.method === "chat.postEphemeral");
    expect(ephemeral.map((c) => [c.params.user, c.params.text])).toEqual([["U_ALICE", "Only for alice."]]);
    expect(finalText(h, "C1", root.ts)).toEqual(["For the thread."]);
  });
});

describe("Slack adapter: duplicates and rate limits", () => {
  it("posts one reply when Slack delivers the same mention three times, as app_mention and as message", async () => {
    h = await startHarness();
    const m = h.emu.mention("C1", "U_ALICE", "only once", { times: 3 });
    await settled(h, "C1", m);
    await waitFor(() => h!.emu.delivery.deliveries.filter((d) => d.acked).length >= 6);
    expect(h.runner.inbounds).toHaveLength(1);
    // The copies stop in the adapter: only the first reaches the runner's dedupe.
    expect(h.runner.handled).toBe(1);
    expect(finalText(h, "C1", m.ts)).toEqual(["Hello from Switchboard."]);
    expect(h.emu.api.calls.filter((c) => c.method === "reactions.add")).toHaveLength(1);
  });

  it("delivers the complete final text when every second write is rate limited", async () => {
    h = await startHarness({ emulator: { rateLimits: { failEveryNthWrite: 2, forcedRetryAfter: 1 } } });
    const text = Array.from({ length: 12 }, (_, i) => `Sentence number ${i + 1} of the answer.`).join(" ");
    h.runner.script = streamText(text, 12, 100);
    const m = h.emu.mention("C1", "U_ALICE", "long one");
    await settled(h, "C1", m);
    expect(finalText(h, "C1", m.ts)).toEqual([text]);
    expect(h.emu.rates.limited.length).toBeGreaterThan(0);
    // A 429 never created a message, so there is exactly one.
    expect(h.emu.botReplies("C1", m.ts)).toHaveLength(1);
  });

  it("splits a 20,000-character answer with code blocks into several messages, fences intact, text unchanged", async () => {
    h = await startHarness();
    const sections: string[] = [];
    for (let i = 0; sections.join("\n\n").length < 20_000; i++) {
      const code = Array.from(
        { length: 40 },
        (_, k) => `  const v${k} = compute(${i}, ${k}); // step ${k}`,
      ).join("\n");
      sections.push(
        `## Part ${i}\n\nHere is how step ${i} works, explained in a sentence or two.\n\n\`\`\`ts\n${code}\n\`\`\``,
      );
    }
    const answer = sections.join("\n\n");
    h.runner.script = streamText(answer, 10, 20);
    const m = h.emu.mention("C1", "U_ALICE", "write a lot");
    await settled(h, "C1", m);
    const texts = finalText(h, "C1", m.ts);
    expect(texts.length).toBeGreaterThan(5);
    for (const t of texts) {
      expect(t.length).toBeLessThanOrEqual(SLACK_MESSAGE_LIMIT);
      expect(openFenceAtEnd(t)).toBeNull();
    }
    expect(joinParts(texts)).toBe(answer);
  });
});

describe("Slack adapter: stopping", () => {
  it("keeps its share of the workspace's write budgets while the answers in flight drain, and gives it up at close", async () => {
    h = await startHarness();
    // Another replica of the app, on the same store.
    const other = new SharedBudgets(slackWritePolicy, h.state, "slack");
    const records = async () => {
      const members = await h!.state.listMembers("budgets:slack");
      return Promise.all(members.map((m) => h!.state.get<{ closed?: boolean }>(`budget:slack:${m}`)));
    };
    const closed = async () => (await records()).filter((r) => r?.closed).length;
    try {
      await vi.waitFor(async () => {
        await other.sync();
        expect(await records()).toHaveLength(2);
      });
      // stop() ends the events; the runtime's drain comes after it, and its answers still
      // write. A closed record takes no share: the other replica would take all of it.
      await h.adapter.stop();
      expect(await closed()).toBe(0);
      await h.adapter.close?.();
      expect(await closed()).toBe(1);
    } finally {
      await other.close();
    }
  });
});
