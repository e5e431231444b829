import { LogLevel, WebClient } from "@slack/web-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SlackEmulator } from "../../../test/emulators/slack/index.js";
import { BOT_ID, BOT_USER_ID } from "../../../test/emulators/slack/state.js";
import { REPLY_METADATA, ThreadSnapshot } from "./resume.js";

let emu: SlackEmulator;
let web: WebClient;
let root: string;

beforeEach(async () => {
  emu = await SlackEmulator.start();
  web = new WebClient(emu.botToken, { slackApiUrl: emu.apiUrl, logLevel: LogLevel.ERROR });
  root = emu.state.addMessage({ channel: "C1", user: "U_ALICE", text: "<@U_BOT> a question" }).ts;
});
afterEach(async () => {
  await emu.stop();
});

/** One of the bot's messages in the thread, as Slack has it. */
function botMessage(text: string, extra: Record<string, unknown> = {}) {
  return emu.state.addMessage({
    channel: "C1",
    thread_ts: root,
    user: BOT_USER_ID,
    bot_id: BOT_ID,
    text,
    ...extra,
  }).ts;
}

const snapshot = () => new ThreadSnapshot(web, "C1", root);
const pause = () => new Promise((r) => setTimeout(r, 5));

describe("the message a stopped process began and never recorded", () => {
  it("is the bot's one message since the start was marked", async () => {
    const earlier = botMessage("the thread's earlier answer");
    await pause();
    const since = Date.now();
    await pause();
    const begun = botMessage("The answer starts");
    expect(await snapshot().unrecorded(BOT_ID, since, [])).toBe(begun);
    expect(begun).not.toBe(earlier);
  });

  it("comes after every message the record names, whatever the marking process's clock said", async () => {
    const named = botMessage("the reply's first segment");
    const begun = botMessage("its second segment");
    // A clock far behind Slack's: the named messages still bound the search.
    expect(await snapshot().unrecorded(BOT_ID, 0, [named])).toBe(begun);
  });

  it("is none when the bot posted nothing since, or only messages that say they are something else", async () => {
    botMessage("the thread's earlier answer");
    await pause();
    const since = Date.now();
    await pause();
    emu.state.addMessage({ channel: "C1", thread_ts: root, user: "U_ALICE", text: "a person's message" });
    emu.state.addMessage({ channel: "C1", thread_ts: root, bot_id: "B_OTHER", text: "another app's" });
    botMessage("a keyed reply message", {
      metadata: { event_type: REPLY_METADATA, event_payload: { key: "sbkey" } },
    });
    botMessage("Allow this tool call?", {
      blocks: [
        { type: "actions", elements: [{ type: "button", text: { type: "plain_text", text: "Allow" } }] },
      ],
    });
    botMessage("Pick one", {
      blocks: [
        { type: "section", text: { type: "mrkdwn", text: "Pick one" }, accessory: { type: "button" } },
      ],
    });
    emu.state.addMessage({
      channel: "C1",
      thread_ts: root,
      user: BOT_USER_ID,
      bot_id: BOT_ID,
      text: "",
      files: [
        {
          id: "F1",
          name: "chart.png",
          title: "chart.png",
          mimetype: "image/png",
          size: 1,
          bytes: new Uint8Array(1),
          shared: true,
        },
      ],
    });
    expect(await snapshot().unrecorded(BOT_ID, since, [])).toBeNull();
  });

  it("is none when two messages could be it: writing on in the wrong one would lose its text", async () => {
    const since = Date.now() - 1;
    botMessage("one");
    botMessage("two");
    expect(await snapshot().unrecorded(BOT_ID, since, [])).toBeNull();
  });
});
