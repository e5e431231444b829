import { describe, expect, it } from "vitest";
import { CONSOLE_KEY } from "../adapters/console/index.js";
import { channelOfKey, dmKey, guildKey } from "../adapters/discord/context.js";
import { threadKey } from "../adapters/slack/events.js";
import { parseThreadKey } from "../adapters/slack/index.js";
import { decodeThread, encodeThread, platformOf, type ThreadRef } from "./thread.js";

/** The contract every platform's keys keep: what an adapter encodes decodes back to the same place. */
describe("thread references", () => {
  const refs: ThreadRef[] = [
    { platform: "slack", team: "T1", channel: "C1", thread: "1712345678.000100" },
    { platform: "slack", team: "T1", channel: "D0AB", thread: "1712345678.000200" },
    { platform: "discord", guild: "111", channel: "222" },
    { platform: "discord", guild: "dm", channel: "333" },
    { platform: "console", name: "local" },
  ];

  it.each(refs)("round-trips $platform references", (ref) => {
    const key = encodeThread(ref);
    expect(decodeThread(key)).toEqual(ref);
    expect(platformOf(key)).toBe(ref.platform);
  });

  it("decodes the keys the Slack adapter writes to where it writes", () => {
    const key = threadKey("T9", "C42", "1712345678.000900");
    expect(key).toBe("slack:T9:C42:1712345678.000900");
    expect(parseThreadKey(key)).toEqual({ team: "T9", channel: "C42", threadTs: "1712345678.000900" });
  });

  it("decodes the keys the Discord adapter writes to the channel it writes in", () => {
    expect(channelOfKey(guildKey("G1", "TH1"))).toBe("TH1");
    expect(channelOfKey(dmKey("DM1"))).toBe("DM1");
    expect(decodeThread(dmKey("DM1"))).toEqual({ platform: "discord", guild: "dm", channel: "DM1" });
    expect(channelOfKey("slack:T1:C1:1.2")).toBeUndefined();
  });

  it("keeps the console's key stable across runs", () => {
    expect(CONSOLE_KEY).toBe("console:local");
  });

  it.each(["slack:T1:C1", "slack:T1:C1:1.2:extra", "discord:G1", "teams:T1:C1", "", "slack::C1:1.2"])(
    "refuses %j with a sentence naming the key",
    (key) => {
      expect(() => decodeThread(key)).toThrow(`"${key}" is not a thread key Switchboard writes.`);
    },
  );

  it("refuses to encode an id that would not split back", () => {
    expect(() => encodeThread({ platform: "discord", guild: "G:1", channel: "2" })).toThrow(
      'A discord thread id cannot be "G:1".',
    );
  });
});
