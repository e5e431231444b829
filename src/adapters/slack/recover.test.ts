import { afterEach, describe, expect, it } from "vitest";
import {
  type Harness,
  type Script,
  startHarness,
  streamText,
} from "../../../test/emulators/slack/adapter-harness.js";
import { type EmuMessage, waitFor } from "../../../test/emulators/slack/index.js";
import type { ReplyAddress } from "../../runtime/contract.js";
import { joinParts } from "../../runtime/split.js";
import { postKeys } from "../../runtime/write-keys.js";
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

const PARTIAL = "The answer starts like this, and then";
const POST_UPDATE = { config: { slack: { nativeStreaming: false } } };

/**
 * A turn cut off mid-answer, as kill -9 leaves it: `partial` is on Slack, the reply
 * records where it is, and nothing ends it. Resolves to the thread's root and the
 * addresses recorded, in order.
 */
async function cutOff(
  h: Harness,
  opts: { partial?: string; status?: string; keys?: (index: number) => string } = {},
): Promise<{ root: EmuMessage; key: string; addresses: ReplyAddress[] }> {
  const partial = opts.partial ?? PARTIAL;
  const addresses: ReplyAddress[] = [];
  const script: Script = async (inbound) => {
    inbound.reply.onAddress?.(async (a) => {
      addresses.push(structuredClone(a));
    });
    if (opts.keys) inbound.reply.keyPosts?.(opts.keys);
    const sink = inbound.reply.stream();
    sink.write(partial);
    if (opts.status) await inbound.reply.status(opts.status);
    // With post + update, the status shows as a line under the answer.
    const shown = opts.status ? `${partial}\n\n_${opts.status}_` : partial;
    const replies = () => h.emu.botReplies(inbound.channel, root.ts);
    await waitFor(() => joinParts(replies().map((m) => m.text)) === shown);
    // Slack has a message a moment before the reply hears back and records it.
    await waitFor(() => addresses.at(-1)?.messages.length === replies().length);
  };
  h.runner.script = script;
  const root = h.emu.mention("C1", "U_ALICE", "a question the crash interrupts");
  await waitFor(() => h.runner.inbounds.length === 1);
  await h.runner.idle();
  return { root, key: `slack:T1:C1:${root.ts}`, addresses };
}

const calls = (h: Harness, method: string, since = 0) =>
  h.emu.api.calls.slice(since).filter((c) => c.method === method);

describe("Slack adapter: the interrupted message itself ends with the note", () => {
  it("post + update: records the message when it is posted, then edits it to end with the note", async () => {
    h = await startHarness(POST_UPDATE);
    const { root, key, addresses } = await cutOff(h);
    const [reply] = h.emu.botReplies("C1", root.ts);
    expect(addresses).toEqual([{ messages: [reply!.ts] }]);
    const before = h.emu.api.calls.length;
    const started = Date.now();
    await h.adapter.recover!(key, addresses.at(-1), NOTE);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(h.emu.botReplies("C1", root.ts).map((r) => [r.ts, r.text])).toEqual([
      [reply!.ts, `${PARTIAL}\n\n${NOTE}`],
    ]);
    expect(calls(h, "chat.postMessage", before)).toHaveLength(0);
  });

  it("post + update: drops a status line the crash left under the answer", async () => {
    h = await startHarness(POST_UPDATE);
    const { root, key, addresses } = await cutOff(h, { status: "Calling everything__echo…" });
    await h.adapter.recover!(key, addresses.at(-1), NOTE);
    expect(h.emu.botReplies("C1", root.ts).map((r) => r.text)).toEqual([`${PARTIAL}\n\n${NOTE}`]);
  });

  it("native stream still open: stops it with the note, in one call", async () => {
    h = await startHarness();
    const { root, key, addresses } = await cutOff(h);
    const [reply] = h.emu.botReplies("C1", root.ts);
    expect(reply?.stream?.state).toBe("streaming");
    expect(addresses).toEqual([
      { messages: [], streaming: false, starting: expect.any(Number) },
      { messages: [reply!.ts], streaming: true },
    ]);
    const before = h.emu.api.calls.length;
    await h.adapter.recover!(key, addresses.at(-1), NOTE);
    const after = h.emu.botReplies("C1", root.ts);
    expect(after.map((r) => [r.ts, r.text, r.stream?.state])).toEqual([
      [reply!.ts, `${PARTIAL}\n\n${NOTE}`, "stopped"],
    ]);
    expect(calls(h, "chat.stopStream", before).map((c) => c.ok)).toEqual([true]);
    expect(calls(h, "chat.update", before)).toHaveLength(0);
    expect(calls(h, "chat.postMessage", before)).toHaveLength(0);
  });

  it("native stream the crash kept from the record (Slack made it, its ts never came back): stops that one with the note", async () => {
    h = await startHarness();
    const { root, key, addresses } = await cutOff(h);
    const [reply] = h.emu.botReplies("C1", root.ts);
    // The record as the crash left it: the start on its way, no ts.
    const marked = addresses[0]!;
    expect(marked).toEqual({ messages: [], streaming: false, starting: expect.any(Number) });
    const before = h.emu.api.calls.length;
    await h.adapter.recover!(key, marked, NOTE);
    expect(h.emu.botReplies("C1", root.ts).map((r) => [r.ts, r.text, r.stream?.state])).toEqual([
      [reply!.ts, `${PARTIAL}\n\n${NOTE}`, "stopped"],
    ]);
    expect(calls(h, "chat.postMessage", before)).toHaveLength(0);
  });

  it("native stream past its lifetime: edits the message instead, since it can no longer be stopped", async () => {
    h = await startHarness({ emulator: { limits: { streamLifetimeMs: 300 } } });
    const { root, key, addresses } = await cutOff(h);
    await new Promise((r) => setTimeout(r, 500));
    const before = h.emu.api.calls.length;
    await h.adapter.recover!(key, addresses.at(-1), NOTE);
    expect(h.emu.botReplies("C1", root.ts).map((r) => r.text)).toEqual([`${PARTIAL}\n\n${NOTE}`]);
    expect(calls(h, "chat.stopStream", before).map((c) => c.ok)).toEqual([false]);
    expect(calls(h, "chat.update", before).map((c) => c.ok)).toEqual([true]);
    expect(calls(h, "chat.postMessage", before)).toHaveLength(0);
  });

  it("edits the last message of a reply split over several, leaving the others as they are", async () => {
    h = await startHarness(POST_UPDATE);
    const long = `${"A sentence of the first message. ".repeat(140)}\n\nThe second message starts`;
    const { root, key, addresses } = await cutOff(h, { partial: long.slice(0, 4_000) });
    const replies = h.emu.botReplies("C1", root.ts);
    expect(replies.length).toBe(2);
    expect(addresses.at(-1)).toEqual({ messages: replies.map((r) => r.ts) });
    const first = replies[0]!.text;
    await h.adapter.recover!(key, addresses.at(-1), NOTE);
    const after = h.emu.botReplies("C1", root.ts);
    expect(after.map((r) => r.ts)).toEqual(replies.map((r) => r.ts));
    expect(after[0]?.text).toBe(first);
    expect(after[1]?.text).toMatch(/\n\nInterrupted by a restart; ask again\.$/);
  });

  it("posts the note in the thread when the message was deleted meanwhile", async () => {
    h = await startHarness(POST_UPDATE);
    const { root, key, addresses } = await cutOff(h);
    h.emu.botReplies("C1", root.ts)[0]!.deleted = true;
    await h.adapter.recover!(key, addresses.at(-1), NOTE);
    expect(h.emu.botReplies("C1", root.ts).map((r) => r.text)).toEqual([NOTE]);
  });
});

describe("Slack adapter: a reply rebuilt from its address", () => {
  for (const [name, opts] of [
    ["post + update", POST_UPDATE],
    ["native streaming", {}],
  ] as const) {
    it(`${name}: goes on in the same message, posting none`, async () => {
      h = await startHarness(opts);
      const { root, key, addresses } = await cutOff(h);
      const reply = h.adapter.replyFor!(key, addresses.at(-1)!);
      const recorded: ReplyAddress[] = [];
      reply.onAddress?.(async (a) => {
        recorded.push(a);
      });
      const sink = reply.stream();
      sink.write(" it goes on after a click.");
      await sink.finish();
      const replies = h.emu.botReplies("C1", root.ts);
      expect(replies.map((r) => r.text)).toEqual([`${PARTIAL} it goes on after a click.`]);
      expect(replies[0]?.stream?.state ?? "none").not.toBe("streaming");
      expect(recorded).toEqual([]);
    });
  }
});

describe("Slack adapter: idempotency keys in message metadata", () => {
  it("a retaken reply finds the message its dead process posted but never recorded, and writes in it", async () => {
    h = await startHarness(POST_UPDATE);
    const keys = postKeys("turn-cut-before-its-record");
    const { root, key } = await cutOff(h, { keys });
    const [orphan] = h.emu.botReplies("C1", root.ts);
    expect(orphan?.metadata).toEqual({ event_type: "switchboard_reply", event_payload: { key: keys(0) } });
    const before = calls(h, "chat.postMessage").length;
    // The record names no message: the crash came before the address was written.
    const reply = h.adapter.replyFor!(key, { messages: [], retake: "" });
    const recorded: ReplyAddress[] = [];
    reply.onAddress?.(async (a) => {
      recorded.push(a);
    });
    reply.keyPosts?.(keys);
    const sink = reply.stream();
    sink.write("The whole answer, from the top.");
    await sink.finish();
    expect(h.emu.botReplies("C1", root.ts).map((r) => [r.ts, r.text])).toEqual([
      [orphan!.ts, "The whole answer, from the top."],
    ]);
    expect(calls(h, "chat.postMessage")).toHaveLength(before);
    expect(recorded).toEqual([{ messages: [orphan!.ts] }]);
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
