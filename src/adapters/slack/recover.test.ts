import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness, streamText } from "../../../test/emulators/slack/adapter-harness.js";
import { waitFor } from "../../../test/emulators/slack/index.js";
import { parseThreadKey } from "./index.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const NOTE = "Interrupted by a restart; ask again.";

describe("Slack adapter: ending replies a crash interrupted", () => {
  it("posts the note in the thread the key names", async () => {
    h = await startHarness();
    const root = h.emu.post("C1", "U_ALICE", "a question the crash interrupted");
    await h.adapter.recover!(`slack:T1:C1:${root.ts}`, undefined, NOTE);
    const replies = h.emu.botReplies("C1", root.ts);
    expect(replies.map((r) => r.text)).toEqual([NOTE]);
    expect(replies[0]?.thread_ts).toBe(root.ts);
    expect(h.runner.inbounds).toHaveLength(0);
  });

  it("rejects a key that names no Slack thread, posting nothing", async () => {
    h = await startHarness();
    await expect(h.adapter.recover!("discord:G1:123", undefined, NOTE)).rejects.toThrow(
      /Not a Slack thread key/,
    );
    await expect(h.adapter.recover!("slack:T1:C1", undefined, NOTE)).rejects.toThrow(
      /Not a Slack thread key/,
    );
    expect(h.emu.api.calls.filter((c) => c.method === "chat.postMessage")).toHaveLength(0);
    expect(parseThreadKey("slack:T1:C1:1712345678.000100")).toEqual({
      team: "T1",
      channel: "C1",
      threadTs: "1712345678.000100",
    });
  });

  it("fails when Slack refuses the note, so the reply stays pending, and counts the failed write", async () => {
    h = await startHarness();
    await expect(h.adapter.recover!("slack:T1:C_GONE:1712345678.000100", undefined, NOTE)).rejects.toThrow(
      /channel_not_found/,
    );
    expect(h.platformErrors).toEqual([false]);
  });
});

describe("Slack adapter: platform error counts", () => {
  it("reports 429s on writes as rate limited, and the answer still arrives whole", async () => {
    h = await startHarness({ emulator: { rateLimits: { failEveryNthWrite: 2, forcedRetryAfter: 1 } } });
    const answer = "One sentence. Another sentence. A third one to finish.";
    h.runner.script = streamText(answer, 6, 150);
    const m = h.emu.mention("C1", "U_ALICE", "count my errors");
    await waitFor(
      () =>
        h!.emu
          .botReplies("C1", m.ts)
          .map((r) => r.text)
          .join("") === answer,
      {
        timeoutMs: 20_000,
      },
    );
    expect(h.platformErrors.length).toBeGreaterThan(0);
    expect(h.platformErrors.every((rateLimited) => rateLimited)).toBe(true);
  });
});
