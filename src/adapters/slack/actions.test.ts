import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../../../test/emulators/slack/adapter-harness.js";
import { waitFor } from "../../../test/emulators/slack/index.js";
import { clickAction, submitView } from "../../../test/emulators/slack/interactive.js";
import { dispatchInteractions } from "../../../test/support/interactions.js";
import type { TurnRunner } from "../../runtime/contract.js";
import { FormDesk } from "../../runtime/forms/desk.js";
import { FORM_OVER } from "../../runtime/forms/texts.js";
import { interactionId } from "../../runtime/interaction-ids.js";
import { EXPIRED_NOTE } from "../../runtime/interactions.js";
import { PROMPT_FORM } from "../../runtime/prompts.js";
import type { FormBook, FormRecord } from "../../store/forms.js";
import { formMetadata } from "./actions.js";
import { ACK_HOLD_MS } from "./held-acks.js";
import { toMrkdwn } from "./mrkdwn.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** A message of the bot's in a thread, carrying buttons (their blocks do not matter to Slack's payload). */
async function buttonMessage(h: Harness): Promise<{ ts: string; threadTs: string }> {
  const asked = h.emu.mention("C1", "U_ALICE", "may I?");
  const [reply] = await waitFor(() => {
    const r = h.emu.botReplies("C1", asked.ts);
    return r.length === 1 && r;
  });
  return { ts: reply!.ts, threadTs: asked.ts };
}

describe("Slack adapter: buttons and forms", () => {
  it("acks a click at once and hands its ref, value and clicker to the runner", async () => {
    h = await startHarness();
    const msg = await buttonMessage(h);
    const { deliveries, payload } = clickAction(h.emu, {
      user: "U_ALICE",
      channel: "C1",
      messageTs: msg.ts,
      actionId: interactionId("req42", "approve"),
      value: "approve",
    });
    await waitFor(() => h!.runner.interactions.length === 1);
    expect(deliveries[0]).toMatchObject({ acked: true });
    expect(deliveries[0]?.failed).toBeUndefined();
    expect(h.runner.interactions[0]).toMatchObject({
      id: `slack:i:${payload.trigger_id}`,
      kind: "button",
      ref: "req42",
      value: "approve",
      platform: "slack",
      user: { id: "U_ALICE", name: "alice", bot: false },
    });
  });

  it("acks before the runner is done, however long it takes", async () => {
    h = await startHarness({ emulator: { ackTimeoutMs: 300 } });
    let release = () => {};
    h.runner.interact = () => new Promise<void>((r) => (release = r));
    const msg = await buttonMessage(h);
    const click = { user: "U_ALICE", channel: "C1", messageTs: msg.ts };
    const { deliveries } = clickAction(h.emu, { ...click, actionId: interactionId("slow") });
    await deliveries[0]?.done;
    release();
    expect(deliveries[0]).toMatchObject({ acked: true, lateAcks: [] });
    expect(deliveries[0]?.failed).toBeUndefined();
  });

  it("takes the value from the action id when the button has none, and a select's choice as the value", async () => {
    h = await startHarness();
    const msg = await buttonMessage(h);
    const at = { user: "U_ALICE", channel: "C1", messageTs: msg.ts };
    clickAction(h.emu, { ...at, actionId: interactionId("req1", "deny") });
    await waitFor(() => h!.runner.interactions.length === 1);
    clickAction(h.emu, { ...at, actionId: interactionId("req2"), selected: "gpt-4o" });
    await waitFor(() => h!.runner.interactions.length === 2);
    expect(h.runner.interactions.map((i) => [i.ref, i.value])).toEqual([
      ["req1", "deny"],
      ["req2", "gpt-4o"],
    ]);
  });

  it("shows the clicker that the button has expired, only to them, in the thread", async () => {
    h = await startHarness();
    dispatchInteractions(h.runner);
    const msg = await buttonMessage(h);
    clickAction(h.emu, {
      user: "U_ALICE",
      channel: "C1",
      messageTs: msg.ts,
      actionId: interactionId("gone"),
    });
    const note = await waitFor(() => h!.emu.state.ephemerals.find((e) => e.via === "chat.postEphemeral"));
    expect(note).toMatchObject({
      channel: "C1",
      user: "U_ALICE",
      thread_ts: msg.threadTs,
      text: toMrkdwn(EXPIRED_NOTE),
    });
  });

  const SIGN_IN =
    "Sign in to mine with your own account (this link is yours alone and works once): https://auth.example/x";

  for (const [who, away] of [
    [
      "the clicker has left the channel",
      (x: Harness) => x.emu.state.channels.get("C3")!.members!.delete("U_ALICE"),
    ],
    [
      "the bot was removed from the channel",
      (x: Harness) => (x.emu.state.channels.get("C3")!.botMember = false),
    ],
  ] as const) {
    it(`answers the clicker by direct message, and never in the channel, when ${who}`, async () => {
      h = await startHarness();
      h.emu.state.addChannel("C3", "team", { members: ["U_ALICE", "U_BOB"] });
      h.runner.interact = async (interaction) => interaction.respond(SIGN_IN);
      const asked = h.emu.mention("C3", "U_ALICE", "connect me");
      const [reply] = await waitFor(() => {
        const r = h!.emu.botReplies("C3", asked.ts);
        return r.length === 1 && r;
      });
      away(h);
      clickAction(h.emu, {
        user: "U_ALICE",
        channel: "C3",
        messageTs: reply!.ts,
        actionId: interactionId("s1"),
      });
      const dm = h.emu.state.dmChannel("U_ALICE").id;
      const told = await waitFor(() => h!.emu.state.history(dm).find((m) => m.user === "U_BOT"));
      expect(told.text).toBe(`I could not show you this in <#C3>, so here it is.\n${toMrkdwn(SIGN_IN)}`);
      expect(h.emu.state.ephemerals).toEqual([]);
      const posted = h.emu.state.messages.filter((m) => m.channel !== dm && m.text.includes("auth.example"));
      expect(posted).toEqual([]);
    });
  }

  it("tells what a submitted prompt's form says by direct message when Slack refuses it as an ephemeral", async () => {
    h = await startHarness();
    h.emu.state.addChannel("C3", "team", { members: ["U_BOB"] });
    const runner: TurnRunner = h.runner;
    runner.promptForm = async () => ({ say: "That prompt is no longer offered." });
    submitView(h.emu, {
      user: "U_ALICE",
      callbackId: interactionId("p1", PROMPT_FORM),
      values: {},
      privateMetadata: formMetadata({ channel: "C3" }),
    });
    const dm = h.emu.state.dmChannel("U_ALICE").id;
    const told = await waitFor(() => h!.emu.state.history(dm).find((m) => m.user === "U_BOT"));
    expect(told.text).toBe(
      "I could not show you this in <#C3>, so here it is.\nThat prompt is no longer offered.",
    );
    expect(h.emu.state.history("C3")).toEqual([]);
  });

  it("flags a bot's click, which the dispatcher ignores", async () => {
    h = await startHarness();
    h.emu.state.users.set("U_OTHERBOT", {
      id: "U_OTHERBOT",
      name: "otherbot",
      realName: "Other bot",
      isBot: true,
      botId: "B_OTHER",
    });
    const { handled } = dispatchInteractions(h.runner);
    const msg = await buttonMessage(h);
    clickAction(h.emu, {
      user: "U_OTHERBOT",
      channel: "C1",
      messageTs: msg.ts,
      actionId: interactionId("r"),
    });
    await waitFor(() => handled.length === 1);
    expect(handled[0]?.user).toMatchObject({ id: "U_OTHERBOT", bot: true });
    expect(h.emu.state.ephemerals).toEqual([]);
  });

  it("answers a click Slack delivers twice once", async () => {
    h = await startHarness();
    const { handled } = dispatchInteractions(h.runner);
    const msg = await buttonMessage(h);
    clickAction(h.emu, {
      user: "U_ALICE",
      channel: "C1",
      messageTs: msg.ts,
      actionId: interactionId("twice"),
      times: 2,
    });
    await waitFor(() => handled.length === 2);
    await waitFor(() => h!.emu.state.ephemerals.length > 0);
    expect(h.emu.state.ephemerals).toHaveLength(1);
  });

  it("acks a form submission, hands its fields to the runner and answers where the form came from", async () => {
    h = await startHarness();
    const { handled } = dispatchInteractions(h.runner);
    const msg = await buttonMessage(h);
    const { deliveries } = submitView(h.emu, {
      user: "U_ALICE",
      callbackId: interactionId("form7"),
      values: {
        b1: { name: { type: "plain_text_input", value: "Ada" } },
        b2: {
          colour: {
            type: "static_select",
            selected_option: { text: { type: "plain_text", text: "Blue" }, value: "blue" },
          },
        },
        b3: { note: { type: "plain_text_input", value: null } },
      },
      privateMetadata: formMetadata({ channel: "C1", threadTs: msg.threadTs }),
    });
    await waitFor(() => handled.length === 1);
    // The ack follows the runner's answer (a form with errors stays open with them).
    await waitFor(() => deliveries[0]?.acked);
    // Nothing but the ack: no `response_action`, so the modal closes.
    expect(deliveries[0]?.ackPayload ?? {}).not.toHaveProperty("response_action");
    expect(handled[0]).toMatchObject({
      kind: "form",
      ref: "form7",
      value: { name: "Ada", colour: "blue", note: "" },
      user: { id: "U_ALICE", bot: false },
    });
    const note = await waitFor(() => h!.emu.state.ephemerals.at(-1));
    expect(note).toMatchObject({ channel: "C1", user: "U_ALICE", thread_ts: msg.threadTs });
    expect(note.text).toBe(toMrkdwn(EXPIRED_NOTE));
  });

  it("receives clicks in HTTP mode too, signed and form-encoded", async () => {
    h = await startHarness({ http: true });
    const msg = await buttonMessage(h);
    const { deliveries } = clickAction(h.emu, {
      user: "U_ALICE",
      channel: "C1",
      messageTs: msg.ts,
      actionId: interactionId("http", "ok"),
    });
    await waitFor(() => h!.runner.interactions.length === 1);
    expect(deliveries[0]).toMatchObject({ acked: true });
    expect(h.runner.interactions[0]).toMatchObject({ ref: "http", value: "ok" });
  });
  it("acks a submission of a form already answered in time when Slack is slow to take the answer, which follows", async () => {
    h = await startHarness();
    // The forms desk, finding the form answered: it awaits its sentence to the person.
    const book = { answered: async () => ({ action: "accept", at: new Date().toISOString() }) };
    const desk = new FormDesk({ config: h.config, book: book as unknown as FormBook });
    const record = { ref: "done1", asker: { id: "U_ALICE" } } as FormRecord;
    const runner: TurnRunner = h.runner;
    runner.interact = (interaction) => desk.interact(interaction, record);
    // A spent ephemeral budget, as the person sees it: the answer comes after Slack's 3 s.
    h.emu.slow.set("chat.postEphemeral", 4_000);
    const msg = await buttonMessage(h);
    const { deliveries } = submitView(h.emu, {
      user: "U_ALICE",
      callbackId: interactionId("done1", "p0"),
      values: { b1: { name: { type: "plain_text_input", value: "Ada" } } },
      privateMetadata: formMetadata({ channel: "C1", threadTs: msg.threadTs }),
    });
    await deliveries[0]?.done;
    expect(deliveries[0]).toMatchObject({ acked: true, lateAcks: [] });
    expect(deliveries[0]?.failed).toBeUndefined();
    const note = await waitFor(() => h!.emu.state.ephemerals.find((e) => e.user === "U_ALICE"));
    expect(note).toMatchObject({ channel: "C1", thread_ts: msg.threadTs, text: toMrkdwn(FORM_OVER) });
  });

  it(`acks a submission still being checked after ${ACK_HOLD_MS} ms, and tells its errors to the person`, async () => {
    h = await startHarness();
    const runner: TurnRunner = h.runner;
    runner.interact = async () => {
      await new Promise((r) => setTimeout(r, ACK_HOLD_MS + 500));
      return { errors: { b1: "Name: write at least 2 characters." } };
    };
    const { deliveries } = submitView(h.emu, {
      user: "U_ALICE",
      callbackId: interactionId("slowform", "p0"),
      values: { b1: { name: { type: "plain_text_input", value: "A" } } },
      privateMetadata: formMetadata({ channel: "C1" }),
    });
    await deliveries[0]?.done;
    expect(deliveries[0]).toMatchObject({ acked: true, lateAcks: [] });
    expect(deliveries[0]?.failed).toBeUndefined();
    expect(deliveries[0]?.ackPayload ?? {}).not.toHaveProperty("response_action");
    const note = await waitFor(() => h!.emu.state.ephemerals.find((e) => e.user === "U_ALICE"), {
      timeoutMs: 5_000,
    });
    expect(note.text).toBe(
      "Your form was not sent: Name: write at least 2 characters. Press Fill in again to correct it.",
    );
  });
});
