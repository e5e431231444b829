import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../../../test/emulators/slack/adapter-harness.js";
import type { Delivery } from "../../../test/emulators/slack/delivery.js";
import { waitFor } from "../../../test/emulators/slack/index.js";
import { ACK_HOLD_MS } from "./held-acks.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The deliveries of the mention itself (Slack also sends it as a `message` event, which the adapter drops as a copy). */
const mentions = (h: Harness): Delivery[] =>
  h.emu.delivery.deliveries.filter(
    (d) => (d.payload as { event?: { type?: string } }).event?.type === "app_mention",
  );

for (const http of [false, true]) {
  describe(`Slack adapter: a message's acknowledgement (${http ? "HTTP" : "Socket Mode"})`, () => {
    it("waits until the runner has stored the message, not for its answer", async () => {
      // Slack would deliver it again after this long without an acknowledgement: not within this test.
      h = await startHarness({ http, emulator: { ackTimeoutMs: 30_000 } });
      let stored: (() => void) | undefined;
      let finish!: () => void;
      const answered = new Promise<void>((r) => {
        finish = r;
      });
      h.runner.script = async (inbound) => {
        stored = inbound.onStored;
        await answered;
        await inbound.reply.stream().finish();
      };
      h.emu.mention("C1", "U_ALICE", "hold on");
      await waitFor(() => stored !== undefined);
      await sleep(300);
      expect(mentions(h).map((d) => d.acked)).toEqual([false]);
      stored?.();
      await waitFor(() => mentions(h!)[0]?.acked === true);
      finish();
      await h.runner.idle();
      expect(mentions(h)).toHaveLength(1);
    });

    it(`goes after ${ACK_HOLD_MS} ms when the message is still not stored, before Slack delivers it again`, async () => {
      h = await startHarness({ http });
      let finish!: () => void;
      const answered = new Promise<void>((r) => {
        finish = r;
      });
      h.runner.script = async () => {
        await answered;
      };
      h.emu.mention("C1", "U_ALICE", "a slow store");
      await waitFor(() => h!.runner.inbounds.length === 1);
      expect(mentions(h)[0]?.acked).toBe(false);
      await waitFor(() => mentions(h!)[0]?.acked === true, { timeoutMs: 5_000 });
      // The runner still has it: acknowledged without waiting for the turn.
      expect(h.runner.busy).toBe(1);
      finish();
      await h.runner.idle();
      expect(mentions(h)).toHaveLength(1);
      expect(mentions(h)[0]?.envelopeIds).toHaveLength(1);
    });

    it("goes at once for a message the adapter does not hand on, and for the mention's copy", async () => {
      h = await startHarness({ http, emulator: { ackTimeoutMs: 30_000 } });
      // A channel message without a mention, outside any thread the bot answered.
      h.emu.post("C1", "U_ALICE", "just chatting");
      await waitFor(() => h!.emu.delivery.deliveries.length === 1 && h!.emu.delivery.deliveries[0]!.acked);
      let finish!: () => void;
      const answered = new Promise<void>((r) => {
        finish = r;
      });
      h.runner.script = async () => answered;
      h.emu.mention("C1", "U_BOB", "a question");
      const copy = () =>
        h!.emu.delivery.deliveries.find(
          (d) =>
            (d.payload as { event?: { type?: string; text?: string } }).event?.type === "message" &&
            d !== h!.emu.delivery.deliveries[0],
        );
      await waitFor(() => copy()?.acked === true);
      expect(mentions(h)[0]?.acked).toBe(false);
      finish();
      await h.runner.idle();
    });
  });
}
