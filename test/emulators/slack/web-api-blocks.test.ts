import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SlackEmulator } from "./index.js";
import { rawCall } from "./raw-call.js";

let emu: SlackEmulator;
beforeEach(async () => {
  // The rules of the blocks, not the pace of posts, are under test here.
  emu = await SlackEmulator.start({ rateLimits: { enabled: false } });
});
afterEach(async () => {
  await emu.stop();
});

type Refusal = { ok: boolean; error?: string; response_metadata?: { messages?: string[] } };

/** chat.postMessage with `blocks`, as a naive client sends it: the verdict and Slack's first message. */
async function post(blocks: unknown[]): Promise<{ ok: boolean; error?: string; why?: string }> {
  const res = await rawCall<Refusal>(emu, "chat.postMessage", {
    channel: "C1",
    text: "fallback",
    blocks: JSON.stringify(blocks),
  });
  return {
    ok: res.ok,
    ...(res.error ? { error: res.error } : {}),
    ...(res.response_metadata?.messages?.[0] ? { why: res.response_metadata.messages[0] } : {}),
  };
}

const section = (text: string) => ({ type: "section", text: { type: "mrkdwn", text } });
const button = (i: number, extra: Record<string, unknown> = {}) => ({
  type: "button",
  text: { type: "plain_text", text: `Choice ${i}` },
  action_id: `sb:r:${i}`,
  value: String(i),
  ...extra,
});
const actions = (elements: unknown[]) => ({ type: "actions", elements });
const refused = (pointer: string) => ({
  ok: false,
  error: "invalid_blocks",
  why: expect.stringContaining(pointer),
});

describe("Slack emulator: a message's blocks", () => {
  it("refuses section text past 3,000 characters", async () => {
    expect(await post([section("a".repeat(3_000))])).toEqual({ ok: true });
    expect(await post([section("a".repeat(3_001))])).toEqual(refused("[json-pointer:/blocks/0/text/text]"));
  });

  it("refuses more than 25 elements in an actions block", async () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => button(i));
    expect(await post([actions(many(25))])).toEqual({ ok: true });
    expect(await post([actions(many(26))])).toEqual(refused("[json-pointer:/blocks/0/elements]"));
  });

  it("refuses a button's text past 75 characters, its value past 2,000 and its url past 3,000", async () => {
    const text = { type: "plain_text", text: "x".repeat(76) };
    expect(await post([actions([button(1, { text })])])).toEqual(refused("/blocks/0/elements/0/text/text"));
    expect(await post([actions([button(1, { value: "v".repeat(2_001) })])])).toEqual(
      refused("/blocks/0/elements/0/value"),
    );
    const url = `https://example.com/${"u".repeat(3_000)}`;
    expect(await post([actions([button(1, { url })])])).toEqual(refused("/blocks/0/elements/0/url"));
    expect(await post([actions([button(1, { value: "v".repeat(2_000) })])])).toEqual({ ok: true });
  });

  it("refuses an action_id used twice in one message, across its blocks", async () => {
    expect(await post([actions([button(1), button(1)])])).toEqual(refused("duplicate action_id: sb:r:1"));
    const accessory = { ...section("Pick one."), accessory: button(2) };
    expect(await post([accessory, actions([button(2)])])).toEqual(refused("duplicate action_id: sb:r:2"));
    expect(await post([accessory, actions([button(1)])])).toEqual({ ok: true });
  });

  it("refuses a block type messages do not take", async () => {
    expect(await post([{ type: "banner", text: "?" }])).toEqual(refused("unsupported block type: banner"));
    expect(
      await post([{ type: "divider" }, { type: "header", text: { type: "plain_text", text: "Hi" } }]),
    ).toEqual({
      ok: true,
    });
  });

  it("applies the same rules on chat.update and takes at most 50 blocks on chat.stopStream", async () => {
    const posted = await rawCall<{ ts: string }>(emu, "chat.postMessage", {
      channel: "C1",
      text: "An answer.",
    });
    expect(
      await rawCall(emu, "chat.update", {
        channel: "C1",
        ts: posted.ts,
        text: "An answer.",
        blocks: JSON.stringify([section("a".repeat(3_001))]),
      }),
    ).toMatchObject({ ok: false, error: "invalid_blocks" });
    const root = emu.mention("C1", "U_ALICE", "a question");
    const stream = async () =>
      (
        await rawCall<{ ts: string }>(emu, "chat.startStream", {
          channel: "C1",
          thread_ts: root.ts,
          markdown_text: "Streaming",
          recipient_user_id: "U_ALICE",
          recipient_team_id: "T1",
        })
      ).ts;
    const stop = async (n: number) =>
      rawCall(emu, "chat.stopStream", {
        channel: "C1",
        ts: await stream(),
        blocks: JSON.stringify(Array.from({ length: n }, () => ({ type: "divider" }))),
      });
    expect(await stop(51)).toMatchObject({ ok: false, error: "invalid_blocks" });
    expect(await stop(50)).toMatchObject({ ok: true });
  });
});
