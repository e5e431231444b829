import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness, streamText } from "../../../test/emulators/slack/adapter-harness.js";
import { type EmuMessage, waitFor } from "../../../test/emulators/slack/index.js";
import type { ReplyAddress } from "../../runtime/contract.js";
import { joinParts, openFenceAtEnd } from "../../runtime/split.js";
import { postKeys } from "../../runtime/write-keys.js";
import { toSlackMarkdown } from "./mrkdwn.js";
import { SLACK_MESSAGE_LIMIT } from "./reply.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** The turn is over: the runner is done and the :eyes: is gone. */
async function settled(h: Harness, root: EmuMessage): Promise<void> {
  await waitFor(
    () =>
      h.emu.api.calls.some((c) => c.method === "reactions.remove" && c.params.timestamp === root.ts) &&
      h.emu.state.find(root.channel, root.ts)?.reactions.size === 0,
    { timeoutMs: 30_000 },
  );
}

const texts = (h: Harness, root: EmuMessage) => h.emu.botReplies(root.channel, root.ts).map((m) => m.text);
const calls = (h: Harness, method: string) => h.emu.api.calls.filter((c) => c.method === method);

/** An answer of `n` lines, each a short sentence. */
const lines = (n: number, what: string) =>
  Array.from({ length: n }, (_, i) => `Line ${i + 1} of an answer that ${what}.\n`).join("");

/** Runs `script` with a recorder registered, as the runtime does; returns what it records. */
function recording(h: Harness, script: Harness["runner"]["script"]): ReplyAddress[] {
  const addresses: ReplyAddress[] = [];
  h.runner.script = async (inbound) => {
    inbound.reply.onAddress?.(async (a) => {
      addresses.push(structuredClone(a));
    });
    await script(inbound);
  };
  return addresses;
}

describe("Slack native streaming", () => {
  it("streams the answer into one message with startStream, appendStream and stopStream, identical to the model's text", async () => {
    h = await startHarness();
    const answer = lines(8, "arrives in pieces").trim();
    h.runner.script = streamText(answer, 8, 150);
    const m = h.emu.mention("C1", "U_ALICE", "stream it");
    await settled(h, m);
    const replies = h.emu.botReplies("C1", m.ts);
    expect(replies.map((r) => r.text)).toEqual([answer]);
    expect(replies[0]?.stream?.state).toBe("stopped");
    expect(calls(h, "chat.startStream")[0]?.params).toMatchObject({
      channel: "C1",
      thread_ts: m.ts,
      recipient_user_id: "U_ALICE",
      recipient_team_id: "T1",
    });
    const appends = calls(h, "chat.appendStream");
    expect(appends.length).toBeGreaterThan(0);
    for (const a of appends)
      expect(a.params.chunks).toEqual([{ type: "markdown_text", text: expect.any(String) }]);
    expect(calls(h, "chat.stopStream").filter((c) => c.ok)).toHaveLength(1);
    expect(calls(h, "chat.postMessage")).toHaveLength(0);
    expect(calls(h, "chat.update")).toHaveLength(0);
  });

  it("starts a new segment before the stream's lifetime runs out, the text complete exactly once", async () => {
    h = await startHarness({
      // Slack's lifetime has a margin over the adapter's, so a busy machine cannot make a stream expire.
      emulator: { limits: { streamLifetimeMs: 3_000 } },
      adapter: { stream: { lifetimeMs: 1_500 } },
    });
    const answer = lines(14, "takes longer than one stream may live");
    h.runner.script = streamText(answer, 14, 300);
    const m = h.emu.mention("C1", "U_ALICE", "take your time");
    await settled(h, m);
    const replies = h.emu.botReplies("C1", m.ts);
    expect(replies.length).toBeGreaterThanOrEqual(2);
    expect(replies.map((r) => r.text).join("")).toBe(answer);
    for (const r of replies) expect(r.stream?.state).toBe("stopped");
    expect(h.emu.api.calls.filter((c) => c.error === "message_not_in_streaming_state")).toHaveLength(0);
    expect(calls(h, "chat.postMessage")).toHaveLength(0);
  });

  it("goes on with post + update when a stream expires mid-answer, the text complete exactly once", async () => {
    // Slack ends this stream far sooner than the adapter expects.
    h = await startHarness({ emulator: { limits: { streamLifetimeMs: 700 } } });
    const answer = lines(10, "outlives its stream");
    h.runner.script = streamText(answer, 10, 250);
    const m = h.emu.mention("C1", "U_ALICE", "slowly please");
    await settled(h, m);
    expect(h.emu.api.calls.some((c) => c.error === "message_not_in_streaming_state")).toBe(true);
    const replies = h.emu.botReplies("C1", m.ts);
    expect(replies.length).toBeGreaterThanOrEqual(2);
    expect(replies[0]?.stream).toBeDefined();
    expect(replies.at(-1)?.stream).toBeUndefined();
    expect(replies.map((r) => r.text).join("")).toBe(answer);
  });

  it("records each stream as it starts and as it stops, in order", async () => {
    h = await startHarness({
      emulator: { limits: { streamLifetimeMs: 3_000 } },
      adapter: { stream: { lifetimeMs: 1_000 } },
    });
    const addresses = recording(h, streamText(lines(8, "outlives one stream"), 8, 300));
    const m = h.emu.mention("C1", "U_ALICE", "record it");
    await settled(h, m);
    const ts = h.emu.botReplies("C1", m.ts).map((r) => r.ts);
    expect(ts.length).toBeGreaterThanOrEqual(2);
    // Before each start, that one is on its way: Slack may make it and the process die before its ts is known.
    const expected = ts.flatMap((_, i) => [
      { messages: ts.slice(0, i), streaming: false, starting: expect.any(Number) },
      { messages: ts.slice(0, i + 1), streaming: true },
      { messages: ts.slice(0, i + 1), streaming: false },
    ]);
    expect(addresses).toEqual(expected);
  });

  it("records the messages the post + update fallback posts after a stream expired", async () => {
    h = await startHarness({ emulator: { limits: { streamLifetimeMs: 700 } } });
    const addresses = recording(h, streamText(lines(10, "outlives its stream"), 10, 250));
    const m = h.emu.mention("C1", "U_ALICE", "record the fallback");
    await settled(h, m);
    const [streamed, ...posted] = h.emu.botReplies("C1", m.ts).map((r) => r.ts);
    expect(posted.length).toBeGreaterThanOrEqual(1);
    expect(addresses[1]).toEqual({ messages: [streamed], streaming: true });
    expect(addresses.at(-1)).toEqual({ messages: [streamed, ...posted], streaming: false });
  });

  it("keys the fallback's posts by their places in the reply, after the streamed messages", async () => {
    h = await startHarness({ emulator: { limits: { streamLifetimeMs: 700 } } });
    const keyOf = postKeys("turn-1");
    const script = streamText(lines(10, "outlives its stream"), 10, 250);
    h.runner.script = async (inbound) => {
      inbound.reply.keyPosts?.(keyOf);
      await script(inbound);
    };
    const m = h.emu.mention("C1", "U_ALICE", "key the fallback");
    await settled(h, m);
    const [streamed, ...posted] = h.emu.botReplies("C1", m.ts);
    expect(posted.length).toBeGreaterThanOrEqual(1);
    // A stream takes no key; a takeover finds each posted one by the key of its place.
    expect(streamed?.metadata).toBeUndefined();
    expect(posted.map((p) => p.metadata?.event_payload.key)).toEqual(posted.map((_, i) => keyOf(1 + i)));
  });

  it("posts and updates instead when chat.startStream is refused, the text complete", async () => {
    h = await startHarness();
    h.emu.api.refuse("chat.startStream", "not_allowed_token_type");
    const answer = lines(5, "cannot be streamed natively").trim();
    h.runner.script = streamText(answer, 5, 100);
    const m = h.emu.mention("C1", "U_ALICE", "no streams here");
    await settled(h, m);
    const replies = h.emu.botReplies("C1", m.ts);
    expect(replies.map((r) => r.text)).toEqual([answer]);
    expect(replies[0]?.stream).toBeUndefined();
    expect(calls(h, "chat.postMessage").filter((c) => c.ok)).toHaveLength(1);
    expect(h.platformErrors).toContain(false);
  });

  it("stops the stream without the rating buttons when Slack refuses them on its last stop, the text complete", async () => {
    h = await startHarness();
    const carriesRating = (c: { params: { blocks?: unknown } }) =>
      JSON.stringify(c.params.blocks ?? "").includes("feedback_buttons");
    h.emu.api.refuse("chat.stopStream", "invalid_blocks", Number.POSITIVE_INFINITY, (p) =>
      carriesRating({ params: p }),
    );
    const answer = lines(4, "is rated");
    h.runner.script = async (inbound) => {
      inbound.reply.offerFeedback?.("rating-refused");
      const sink = inbound.reply.stream();
      for (const line of answer.split(/(?<=\n)/)) {
        sink.write(line);
        await new Promise((r) => setTimeout(r, 100));
      }
      await sink.finish({ answered: true });
    };
    const m = h.emu.mention("C1", "U_ALICE", "rate it");
    await settled(h, m);
    const stops = calls(h, "chat.stopStream").map((c) => [c.ok, c.error, carriesRating(c)]);
    expect(stops).toEqual([
      [false, "invalid_blocks", true],
      [true, undefined, false],
    ]);
    const replies = h.emu.botReplies("C1", m.ts);
    expect(replies.map((r) => [r.text, r.stream?.state])).toEqual([[answer, "stopped"]]);
  });

  it("posts the rest when appendStream stays rate limited, nothing lost or repeated", async () => {
    // One append per Slack minute: the second waits far longer than a reply should.
    h = await startHarness({ emulator: { rateLimits: { perMinute: { "chat.appendStream": 1 } } } });
    const answer = lines(8, "meets a rate limit");
    h.runner.script = streamText(answer, 8, 300);
    const m = h.emu.mention("C1", "U_ALICE", "under pressure");
    await settled(h, m);
    expect(h.emu.rates.limited.some((l) => l.method === "chat.appendStream")).toBe(true);
    expect(texts(h, m).join("")).toBe(answer);
    expect(h.platformErrors).toContain(true);
  });

  it("streams a 20,000-character answer with code blocks as several segments, fences intact, text identical", async () => {
    h = await startHarness();
    const sections: string[] = [];
    for (let i = 0; sections.join("\n\n").length < 20_000; i++) {
      const code = Array.from({ length: 40 }, (_, k) => `  const v${k} = compute(${i}, ${k}); // step ${k}`);
      sections.push(
        `## Part ${i}\n\nStep ${i}, explained in a sentence.\n\n\`\`\`ts\n${code.join("\n")}\n\`\`\``,
      );
    }
    const answer = sections.join("\n\n");
    h.runner.script = streamText(answer, 60, 20);
    const m = h.emu.mention("C1", "U_ALICE", "write a lot");
    await settled(h, m);
    const replies = h.emu.botReplies("C1", m.ts);
    expect(replies.length).toBeGreaterThan(5);
    for (const r of replies) {
      expect(r.stream?.state).toBe("stopped");
      expect(r.text.length).toBeLessThanOrEqual(SLACK_MESSAGE_LIMIT);
      expect(openFenceAtEnd(r.text)).toBeNull();
    }
    expect(joinParts(replies.map((r) => r.text))).toBe(answer);
  });

  it("shows tool activity as the thread's status, never inside the streamed text, and clears it", async () => {
    h = await startHarness();
    h.runner.script = async (inbound) => {
      await inbound.reply.status("Calling everything__echo…");
      await streamText("The echo says hello.", 2, 50)(inbound);
    };
    const m = h.emu.mention("C1", "U_ALICE", "echo");
    await settled(h, m);
    expect(texts(h, m)).toEqual(["The echo says hello."]);
    expect(h.emu.state.assistant.get(`C1:${m.ts}`)?.statuses).toEqual(["Calling everything__echo…", ""]);
  });

  it("streams a table only once it is complete, as the same code block a posted reply shows", async () => {
    h = await startHarness();
    const answer = "Results:\n\n| name | count |\n|---|---:|\n| apples | 3 |\n| kiwis | 12 |\n\nThat is all.";
    h.runner.script = streamText(answer, 20, 120);
    const m = h.emu.mention("C1", "U_ALICE", "table");
    await settled(h, m);
    expect(texts(h, m)).toEqual([toSlackMarkdown(answer)]);
    const streamed = h.emu.botReplies("C1", m.ts)[0];
    // Every version the user saw is a beginning of the final text: nothing was taken back.
    expect(streamed?.edits.length).toBeGreaterThan(1);
    for (const e of streamed?.edits ?? []) expect(streamed?.text.startsWith(e.text)).toBe(true);
  });

  it("uses post + update when slack.nativeStreaming is off", async () => {
    h = await startHarness({ config: { slack: { nativeStreaming: false } } });
    const m = h.emu.mention("C1", "U_ALICE", "classic");
    await settled(h, m);
    expect(texts(h, m)).toEqual(["Hello from Switchboard."]);
    expect(calls(h, "chat.startStream")).toHaveLength(0);
  });
});
