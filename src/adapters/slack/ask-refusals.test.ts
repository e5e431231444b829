import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../../../test/emulators/slack/adapter-harness.js";
import { waitFor } from "../../../test/emulators/slack/index.js";
import { toMrkdwn } from "./mrkdwn.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const INVITE = "/invite @Switchboard";

/** What the asker alone is told after `/switchboard ask …` in `channel`. */
async function toldAfterAsk(x: Harness, channel: string): Promise<string> {
  x.emu.slash("/switchboard", "ask what happened?", "U_ALICE", channel);
  const told = await waitFor(() => x.emu.state.ephemerals.find((e) => e.user === "U_ALICE"));
  expect(x.runner.inbounds).toEqual([]);
  return told.text;
}

describe("Slack adapter: /switchboard ask when the question cannot be posted", () => {
  it("asks to be invited only where Slack says the bot is not in the conversation", async () => {
    h = await startHarness();
    h.emu.state.addChannel("C2", "random", { botMember: false });
    h.emu.state.addChannel("G2", "secret", { botMember: false });
    h.emu.state.addChannel("D0AB", "D0AB", { botMember: false, members: ["U_ALICE", "U_BOB"] });
    h.emu.state.addChannel("C4", "old-project", { archived: true });
    const told: Record<string, string> = {};
    for (const channel of ["C2", "G2", "D0AB", "C4"]) {
      told[channel] = await toldAfterAsk(h, channel);
      h.emu.state.ephemerals.length = 0;
    }
    expect(told).toEqual({
      C2: toMrkdwn(
        `I cannot post in this channel: I am not in it. Invite me with \`${INVITE}\`, then ask again.`,
      ),
      G2: toMrkdwn(
        `I cannot post in this conversation: it is private and I am not in it. Invite me with \`${INVITE}\` and ask again, or ask me in a channel I am in.`,
      ),
      D0AB: toMrkdwn(
        "I cannot post in a direct message between other people. Ask me in a channel I am in, or in a direct message with me.",
      ),
      C4: toMrkdwn(
        "I cannot post in this channel: it is archived. Ask me in another channel, or unarchive this one first.",
      ),
    });
  });

  const refusals: [string, string][] = [
    [
      "msg_too_long",
      "Your question is too long for Slack to post in one message. Shorten it, then ask again.",
    ],
    [
      "invalid_blocks",
      "Slack refused the message I made of your question (Slack said invalid_blocks), which is a fault on my side. Asking in other words may work; please tell whoever runs me.",
    ],
    [
      "internal_error",
      "Slack had a problem on its side and did not post your question (Slack said internal_error). Please ask again in a moment.",
    ],
    [
      "restricted_action",
      "A workspace setting stops me from posting in this channel (Slack said restricted_action). Ask me in another channel, or ask a workspace admin to let apps post here.",
    ],
    [
      "restricted_action_thread_only_channel",
      "I cannot post your question in this channel: it takes replies in threads only. Mention me in a thread here instead.",
    ],
  ];
  for (const [error, sentence] of refusals) {
    it(`says what ${error} means, and asks for no invitation`, async () => {
      h = await startHarness();
      h.emu.api.refuse("chat.postMessage", error);
      const told = await toldAfterAsk(h, "C1");
      expect(told).toBe(toMrkdwn(sentence));
      expect(told).not.toContain(INVITE);
    });
  }

  it("says Slack is limiting its posts when every try meets a 429", async () => {
    h = await startHarness({ emulator: { rateLimits: { failEveryNthWrite: 1, forcedRetryAfter: 0 } } });
    const told = await toldAfterAsk(h, "C1");
    expect(told).toBe(
      toMrkdwn(
        "Slack is limiting how fast I may post here, so your question was not posted. Wait a minute, then ask again.",
      ),
    );
    const posts = h.emu.api.calls.filter((c) => c.method === "chat.postMessage");
    expect(posts.length).toBeGreaterThan(1);
    expect(posts.every((c) => c.error === "ratelimited")).toBe(true);
  });
});
