import { afterEach, describe, expect, it } from "vitest";
import { clickComponent, submitModal } from "../../../test/emulators/discord/components.js";
import { type StoredMessage, waitFor } from "../../../test/emulators/discord/index.js";
import { dispatchInteractions } from "../../../test/support/interactions.js";
import { OPEN_FORM } from "../../runtime/contract.js";
import { interactionId } from "../../runtime/interaction-ids.js";
import { EXPIRED_NOTE } from "../../runtime/interactions.js";
import { type Harness, startHarness } from "./harness.test-helper.js";

let h: Harness;

afterEach(async () => {
  await h?.close();
});

const EPHEMERAL = 64;
const DEFERRED_UPDATE = 6;
const DEFERRED_REPLY = 5;

/** A message of the bot's in #general that carries buttons. */
function buttonMessage(h: Harness): StoredMessage {
  const s = h.emulator.state;
  return s.addMessage({
    channelId: s.general,
    guildId: s.guildId,
    author: s.bot,
    content: "May I run github__create_issue?",
    attachments: [],
    mentions: [],
  });
}

/** Ephemeral follow-ups the bot wrote for one interaction. */
function followUps(h: Harness, interactionId: string): StoredMessage[] {
  return h.emulator.botMessages(h.emulator.state.general).filter((m) => m.interactionId === interactionId);
}

describe("Discord adapter: buttons, selects and modals", () => {
  it("acknowledges a click at once and hands its ref, value and clicker to the runner", async () => {
    h = await startHarness();
    const s = h.emulator.state;
    const message = buttonMessage(h);
    const rec = clickComponent(h.emulator, {
      message,
      customId: interactionId("req42", "approve"),
      userId: s.alice.id,
    });
    await waitFor(() => h.runner.interactions.length === 1);
    expect(rec.callbacks).toEqual([DEFERRED_UPDATE]);
    expect(rec.ackMs).toBeLessThan(3_000);
    expect(h.runner.interactions[0]).toMatchObject({
      id: `discord:i:${rec.id}`,
      kind: "button",
      ref: "req42",
      value: "approve",
      platform: "discord",
      user: { id: s.alice.id, name: "alice", bot: false },
    });
    expect(s.findMessage(message.id)?.content).toBe("May I run github__create_issue?");
  });

  it("acknowledges before the runner is done, however long it takes", async () => {
    h = await startHarness();
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    h.runner.interact = () => held.then(() => undefined);
    const rec = clickComponent(h.emulator, {
      message: buttonMessage(h),
      customId: interactionId("slow"),
      userId: h.emulator.state.alice.id,
    });
    await waitFor(() => rec.callbacks.length === 1);
    release();
    expect(rec.callbacks).toEqual([DEFERRED_UPDATE]);
  });

  it("hands a select menu's choices as the value", async () => {
    h = await startHarness();
    const s = h.emulator.state;
    clickComponent(h.emulator, {
      message: buttonMessage(h),
      customId: interactionId("pick"),
      userId: s.alice.id,
      values: ["github", "jira"],
    });
    await waitFor(() => h.runner.interactions.length === 1);
    expect(h.runner.interactions[0]).toMatchObject({ kind: "button", ref: "pick", value: "github,jira" });
  });

  it("tells the clicker that the button has expired, in an ephemeral follow-up", async () => {
    h = await startHarness();
    dispatchInteractions(h.runner);
    const s = h.emulator.state;
    const rec = clickComponent(h.emulator, {
      message: buttonMessage(h),
      customId: interactionId("gone", "approve"),
      userId: s.alice.id,
    });
    const [note] = await waitFor(() => followUps(h, rec.id).length === 1 && followUps(h, rec.id));
    expect(note?.content).toBe(EXPIRED_NOTE);
    expect(note!.flags & EPHEMERAL).toBe(EPHEMERAL);
    expect(rec.followupIds).toEqual([note?.id]);
  });

  it("flags a bot's click, which the dispatcher ignores", async () => {
    h = await startHarness();
    const { handled } = dispatchInteractions(h.runner);
    const s = h.emulator.state;
    const rec = clickComponent(h.emulator, {
      message: buttonMessage(h),
      customId: interactionId("r"),
      userId: s.otherBot.id,
    });
    await waitFor(() => handled.length === 1);
    expect(handled[0]?.user).toMatchObject({ id: s.otherBot.id, bot: true });
    expect(rec.callbacks).toEqual([DEFERRED_UPDATE]);
    expect(rec.followupIds).toEqual([]);
  });

  it("handles a click delivered by two gateway sessions once", async () => {
    h = await startHarness();
    const { seen } = dispatchInteractions(h.runner);
    h.emulator.deliverTwice = true;
    const rec = clickComponent(h.emulator, {
      message: buttonMessage(h),
      customId: interactionId("twice"),
      userId: h.emulator.state.alice.id,
    });
    await waitFor(() => rec.followupIds.length === 1);
    expect(rec.callbacks).toEqual([DEFERRED_UPDATE]);
    expect(seen).toHaveLength(1);
  });

  it("hands a modal's fields to the runner and answers the person ephemerally", async () => {
    h = await startHarness();
    const { handled } = dispatchInteractions(h.runner);
    const s = h.emulator.state;
    const rec = submitModal(h.emulator, {
      customId: interactionId("form7"),
      fields: { title: "Login fails", body: "Since Monday." },
      channelId: s.general,
      userId: s.alice.id,
      message: buttonMessage(h),
    });
    // The runner is done with the click only after its note went out: wait for both.
    await waitFor(() => rec.followupIds.length === 1 && handled.length === 1);
    expect(rec.callbacks).toEqual([DEFERRED_UPDATE]);
    expect(handled[0]).toMatchObject({
      kind: "form",
      ref: "form7",
      value: { title: "Login fails", body: "Since Monday." },
      user: { id: s.alice.id, bot: false },
    });
    const note = s.findMessage(rec.followupIds[0]!)!;
    expect(note.content).toBe(EXPIRED_NOTE);
    expect(note.flags & EPHEMERAL).toBe(EPHEMERAL);
  });

  it("answers a modal that came from no message in its ephemeral deferred reply", async () => {
    h = await startHarness();
    dispatchInteractions(h.runner);
    const s = h.emulator.state;
    const rec = submitModal(h.emulator, {
      customId: interactionId("form8"),
      fields: { why: "because" },
      channelId: s.general,
      userId: s.alice.id,
    });
    await waitFor(() => s.findMessage(rec.originalId ?? "")?.content);
    expect(rec.callbacks).toEqual([DEFERRED_REPLY]);
    const reply = s.findMessage(rec.originalId!)!;
    expect(reply.content).toBe(EXPIRED_NOTE);
    expect(reply.flags & EPHEMERAL).toBe(EPHEMERAL);
    expect(rec.followupIds).toEqual([]);
  });

  it("tells the person when Discord will not open a form, rather than leave the click unanswered", async () => {
    h = await startHarness();
    // Six inputs: Discord refuses the modal (400, 50035), as it would any modal it finds wrong.
    h.runner.interactReply = {
      open: {
        ref: "form9",
        title: "Details",
        fields: ["a", "b", "c", "d", "e", "f"].map((name, i) => ({
          name,
          id: `f${i}`,
          label: name,
          kind: "text" as const,
          required: true,
        })),
        part: 0,
        count: 1,
        submitLabel: "Send",
      },
    };
    const s = h.emulator.state;
    const rec = clickComponent(h.emulator, {
      message: buttonMessage(h),
      customId: interactionId("form9", OPEN_FORM),
      userId: s.alice.id,
    });
    await waitFor(() => rec.callbacks.length > 0, { message: "the click was never acknowledged" });
    expect(rec.callbacks).toEqual([4]);
    const told = followUps(h, rec.id)[0];
    expect((told?.flags ?? 0) & EPHEMERAL).toBe(EPHEMERAL);
    expect(told?.content).toBe(
      "Discord would not open this form. Press Fill in again in a moment, or use Decline or Cancel.",
    );
  });
});
