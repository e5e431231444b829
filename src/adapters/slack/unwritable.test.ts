import { ErrorCode } from "@slack/web-api";
import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../../../test/emulators/slack/adapter-harness.js";
import { waitFor } from "../../../test/emulators/slack/index.js";
import { StreamBroken } from "./stream-calls.js";
import { slackRefusal, unwritableSentence } from "./unwritable.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** What the WebClient throws for an `ok: false` answer. */
const platformError = (error: string) =>
  Object.assign(new Error(`An API error occurred: ${error}`), {
    code: ErrorCode.PlatformError,
    data: { ok: false, error },
  });

describe("why the bot could not answer in Slack, as the asker reads it", () => {
  it("finds Slack's refusal under a writer's wrapping, and none in an outage", () => {
    expect(slackRefusal(platformError("is_archived"))).toBe("is_archived");
    expect(
      slackRefusal(new StreamBroken("streaming failed", { cause: platformError("not_in_channel") })),
    ).toBe("not_in_channel");
    expect(slackRefusal(platformError("internal_error"))).toBeUndefined();
    expect(slackRefusal(new Error("socket hang up"))).toBeUndefined();
  });

  it("links the channel and says what to do", () => {
    expect(unwritableSentence("is_archived", "C9")).toBe(
      "I could not write my answer in <#C9>: the channel is archived. Ask me again in another channel, or unarchive it first.",
    );
    expect(unwritableSentence("not_in_channel", "C9")).toMatch(/Invite me back with `\/invite @Switchboard`/);
    expect(unwritableSentence("restricted_action", "C9")).toMatch(/\(Slack said restricted_action\)/);
  });
});

/**
 * A turn whose channel is archived once its answer shows: the script writes on (as the
 * agent would) until the reply says it is broken, then does what the runtime does.
 */
function archivedMidAnswer(x: Harness, channel: string) {
  const seen: { broken?: unknown; writes: number } = { writes: 0 };
  x.runner.script = async (inbound) => {
    const sink = inbound.reply.stream();
    sink.write("The first part of the answer. ");
    await waitFor(() => x.emu.botReplies(channel, inbound.key.split(":").at(-1)!).some((m) => m.text !== ""));
    x.emu.state.channels.get(channel)!.archived = true;
    const until = Date.now() + 15_000;
    while (seen.broken === undefined && Date.now() < until) {
      sink.write(`More ${seen.writes++}. `);
      await new Promise((r) => setTimeout(r, 100));
      seen.broken = sink.broken?.();
    }
    await sink.fail("Something went wrong.").catch(() => undefined);
    if (seen.broken !== undefined) await inbound.reply.unwritable?.(seen.broken);
  };
  return seen;
}

const dmOf = (x: Harness, user: string) =>
  x.emu.state.history(x.emu.state.dmChannel(user).id).map((m) => m.text);

describe("Slack adapter: an answer whose channel is archived while it is written", () => {
  it("says it is broken when the native stream is refused (so the turn stops), and tells the asker by DM", async () => {
    h = await startHarness();
    h.emu.state.addChannel("C6", "project");
    const seen = archivedMidAnswer(h, "C6");
    h.emu.mention("C6", "U_ALICE", "a long answer please");
    await waitFor(() => dmOf(h!, "U_ALICE").length > 0, { timeoutMs: 20_000 });
    expect(slackRefusal(seen.broken)).toBe("is_archived");
    expect(dmOf(h, "U_ALICE")).toEqual([unwritableSentence("is_archived", "C6")]);
    // Slack refuses an ephemeral message in an archived channel: the DM is where it went.
    expect(h.emu.api.calls.filter((c) => c.method === "chat.postEphemeral").map((c) => c.error)).toEqual([
      "is_archived",
    ]);
    h.emu.state.channels.get("C6")!.archived = false;
  }, 30_000);

  it("says so too when it is posted and updated, and tells the asker by DM", async () => {
    h = await startHarness({ config: { slack: { nativeStreaming: false } } });
    h.emu.state.addChannel("C7", "project");
    const seen = archivedMidAnswer(h, "C7");
    h.emu.mention("C7", "U_ALICE", "a long answer please");
    await waitFor(() => dmOf(h!, "U_ALICE").length > 0, { timeoutMs: 20_000 });
    expect(slackRefusal(seen.broken)).toBe("is_archived");
    expect(dmOf(h, "U_ALICE")).toEqual([unwritableSentence("is_archived", "C7")]);
    h.emu.state.channels.get("C7")!.archived = false;
  }, 30_000);

  it("tells nobody of an outage, which says nothing a person can act on", async () => {
    h = await startHarness();
    const reply = h.adapter.replyFor?.("slack:T1:C1:1.000001", { messages: [], asker: "U_ALICE" });
    await reply?.unwritable?.(platformError("internal_error"));
    expect(
      h.emu.api.calls.filter((c) => c.method.startsWith("chat.") || c.method === "conversations.open"),
    ).toEqual([]);
  });
});
