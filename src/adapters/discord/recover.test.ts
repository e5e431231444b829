import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { waitFor } from "../../../test/emulators/discord/index.js";
import { archiveThread, deleteThread } from "../../../test/emulators/discord/threads.js";
import { log } from "../../log.js";
import type { Inbound, ReplyAddress } from "../../runtime/contract.js";
import { postKeys } from "../../runtime/write-keys.js";
import { type Harness, ScriptedRunner, startHarness } from "./harness.test-helper.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const NOTE = "Interrupted by a restart; ask again.";
const PARTIAL = "The answer starts like this, and then";

interface CutOff {
  inbound: Inbound;
  /** The channel the reply is in. */
  channel: string;
  addresses: ReplyAddress[];
}

/**
 * A runner whose turn is cut off mid-answer, as kill -9 leaves it: `partial` is on
 * Discord, the reply recorded where it is, and nothing ends it.
 */
function cuttingRunner(
  partial: string,
  cut: CutOff[],
  status?: string,
  keys?: (index: number) => string,
): ScriptedRunner {
  return new ScriptedRunner(async (inbound) => {
    const addresses: ReplyAddress[] = [];
    inbound.reply.onAddress?.(async (a) => {
      addresses.push(structuredClone(a));
    });
    if (keys) inbound.reply.keyPosts?.(keys);
    const sink = inbound.reply.stream();
    sink.write(partial);
    if (status) await inbound.reply.status(status);
    await waitFor(() => addresses.length > 0);
    const channel = addresses[0]!.channel!;
    const shown = status ? `${partial}\n\n-# ${status}` : partial;
    // An open code block shows closed while streaming, so the start is what can be waited for.
    await waitFor(() => h!.emulator.botMessages(channel).some((m) => m.content.startsWith(shown)));
    await waitFor(() => addresses.at(-1)?.messages.length === h!.emulator.botMessages(channel).length);
    cut.push({ inbound, channel, addresses });
  });
}

async function mentionCutOff(
  partial = PARTIAL,
  status?: string,
  keys?: (index: number) => string,
): Promise<CutOff> {
  const cut: CutOff[] = [];
  h = await startHarness({ runner: cuttingRunner(partial, cut, status, keys) });
  h.emulator.userMessage(h.emulator.state.general, "a question the crash interrupts", { mentionsBot: true });
  await waitFor(() => cut[0], { timeoutMs: 20_000 });
  return cut[0]!;
}

describe("Discord adapter: the interrupted message itself ends with the note", () => {
  it("records the message when it is posted, then edits it to end with the note, posting nothing", async () => {
    const { inbound, channel, addresses } = await mentionCutOff();
    const [reply] = h!.emulator.botMessages(channel);
    expect(addresses).toEqual([{ messages: [reply!.id], channel }]);
    const posts = () =>
      h!.emulator.requests.filter((r) => r.method === "POST" && r.path.endsWith("/messages"));
    const before = posts().length;
    const started = Date.now();
    await h!.adapter.recover(inbound.key, addresses.at(-1), NOTE);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(h!.emulator.botMessages(channel).map((m) => [m.id, m.content])).toEqual([
      [reply!.id, `${PARTIAL}\n\n${NOTE}`],
    ]);
    expect(posts()).toHaveLength(before);
    expect(h!.emulator.typing.filter((t) => t.at >= started)).toEqual([]);
  });

  it("drops the status line the crash left under the answer", async () => {
    const { inbound, channel, addresses } = await mentionCutOff(PARTIAL, "Calling everything__echo…");
    await h!.adapter.recover(inbound.key, addresses.at(-1), NOTE);
    expect(h!.emulator.botMessages(channel).map((m) => m.content)).toEqual([`${PARTIAL}\n\n${NOTE}`]);
  });

  it("puts the note after the code block the answer was in, not inside it", async () => {
    const partial = "Here:\n\n```ts\nconst x = 1;";
    const { inbound, channel, addresses } = await mentionCutOff(partial);
    await h!.adapter.recover(inbound.key, addresses.at(-1), NOTE);
    const [content] = h!.emulator.botMessages(channel).map((m) => m.content);
    // The added closer ends with a space: it marks the fence as closed by us (see split.ts).
    expect(content).toBe(`${partial}\n\`\`\` \n\n${NOTE}`);
  });

  it("posts the note in the thread when the message was deleted meanwhile", async () => {
    const { inbound, channel, addresses } = await mentionCutOff();
    h!.emulator.botMessages(channel)[0]!.deleted = true;
    await h!.adapter.recover(inbound.key, addresses.at(-1), NOTE);
    expect(h!.emulator.botMessages(channel).map((m) => m.content)).toEqual([NOTE]);
  });

  it("ends quietly, writing nothing, when the thread was deleted meanwhile: there is nothing to mend", async () => {
    const { inbound, channel, addresses } = await mentionCutOff();
    deleteThread(h!.emulator, channel);
    const from = h!.emulator.requests.length;
    await expect(h!.adapter.recover(inbound.key, addresses.at(-1), NOTE)).resolves.toBeUndefined();
    // Told 10003 Unknown Channel, it wrote nowhere else.
    const tried = h!.emulator.requests.slice(from);
    expect(tried.filter((r) => r.method !== "GET")).toEqual([]);
    expect(tried.map((r) => r.status)).toContain(404);
  });

  describe("leaves the reply as it is, with one warning saying what an admin can do, when Discord refuses the bot the thread", () => {
    /** Resolves (the turn's record then ends) and warns once, with the code and who can act. */
    async function recoversWithWarning(cut: CutOff, address: ReplyAddress | undefined, says: RegExp) {
      const warn = vi.spyOn(log, "warn");
      onTestFinished(() => warn.mockRestore());
      await expect(h!.adapter.recover(cut.inbound.key, address, NOTE)).resolves.toBeUndefined();
      const warned = warn.mock.calls.filter(([, msg]) => String(msg).includes("interrupted reply"));
      expect(warned).toHaveLength(1);
      expect(String(warned[0]?.[1])).toMatch(says);
      expect(h!.emulator.botMessages(cut.channel).map((m) => m.content)).toEqual([PARTIAL]);
    }

    it("a permission taken away (50013)", async () => {
      const cut = await mentionCutOff();
      h!.emulator.denyBot(h!.emulator.state.general, "SEND_MESSAGES_IN_THREADS");
      await recoversWithWarning(cut, undefined, /50013.*admin can grant/);
    });

    it("the channel out of its sight (50001)", async () => {
      const cut = await mentionCutOff();
      h!.emulator.denyBot(h!.emulator.state.general, "VIEW_CHANNEL");
      await recoversWithWarning(cut, cut.addresses.at(-1), /50001.*admin can give it back/);
    });

    it("the thread archived and locked (50083)", async () => {
      const cut = await mentionCutOff();
      archiveThread(h!.emulator, cut.channel, { locked: true });
      await recoversWithWarning(cut, cut.addresses.at(-1), /archived or locked.*moderator/);
    });
  });

  it("posts the note in the thread when nothing was written before the crash", async () => {
    const { inbound, channel } = await mentionCutOff();
    await h!.adapter.recover(inbound.key, undefined, NOTE);
    expect(h!.emulator.botMessages(channel).map((m) => m.content)).toEqual([PARTIAL, NOTE]);
  });

  it("edits an interaction's reply through its channel, since the token is gone with the process", async () => {
    const cut: CutOff[] = [];
    h = await startHarness({ runner: cuttingRunner(PARTIAL, cut) });
    const s = h.emulator.state;
    const dm = s.dmChannel(s.bob.id);
    const rec = h.emulator.slash("ask", { question: "secret?" }, dm.id, s.bob.id);
    await waitFor(() => cut[0], { timeoutMs: 20_000 });
    const { inbound, addresses } = cut[0]!;
    expect(addresses).toEqual([{ messages: [rec.originalId], channel: dm.id }]);
    await h.adapter.recover(inbound.key, addresses.at(-1), NOTE);
    expect(h.emulator.botMessages(dm.id).map((m) => [m.id, m.content])).toEqual([
      [rec.originalId, `${PARTIAL}\n\n${NOTE}`],
    ]);
  });
});

describe("Discord adapter: a reply rebuilt from its address", () => {
  it("goes on in the same message, and records a message it has to add", async () => {
    const { inbound, channel, addresses } = await mentionCutOff();
    const reply = h!.adapter.replyFor(inbound.key, addresses.at(-1)!);
    const recorded: ReplyAddress[] = [];
    reply.onAddress?.(async (a) => {
      recorded.push(a);
    });
    const sink = reply.stream();
    sink.write(` it goes on after a click.\n\n${"More words to read. ".repeat(100)}`);
    await sink.finish();
    const messages = h!.emulator.botMessages(channel);
    expect(messages.length).toBe(2);
    expect(messages[0]?.content.startsWith(`${PARTIAL} it goes on after a click.`)).toBe(true);
    expect(recorded).toEqual([{ messages: messages.map((m) => m.id), channel }]);
  });
});

describe("Discord adapter: idempotency keys as enforced nonces", () => {
  it("a retaken reply gets back the message its dead process posted but never recorded, and writes in it", async () => {
    const keys = postKeys("turn-cut-before-its-record");
    const { inbound, channel } = await mentionCutOff(PARTIAL, undefined, keys);
    const [orphan] = h!.emulator.botMessages(channel);
    expect(orphan?.nonce).toBe(keys(0));
    // The record names no message: the crash came before the address was written.
    const reply = h!.adapter.replyFor(inbound.key, { messages: [], channel, retake: "" });
    reply.keyPosts?.(keys);
    const sink = reply.stream();
    sink.write("The whole answer, from the top.");
    await sink.finish();
    expect(h!.emulator.botMessages(channel).map((m) => [m.id, m.content])).toEqual([
      [orphan!.id, "The whole answer, from the top."],
    ]);
  });
});
