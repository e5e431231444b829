import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test/emulators/discord/index.js";
import type { Inbound } from "../../runtime/contract.js";
import { type Harness, ScriptedRunner, startHarness } from "./harness.test-helper.js";
import { RESTARTING } from "./stopping-interactions.js";

let h: Harness | undefined;
let release: () => void = () => {};

afterEach(async () => {
  release();
  await h?.close();
  h = undefined;
});

/** A harness whose adapter is stopping: a turn still in flight keeps it connected. */
async function stopping(): Promise<Harness> {
  const held = new Promise<void>((r) => {
    release = r;
  });
  const runner = new ScriptedRunner(async (inbound: Inbound) => {
    inbound.reply.stream().write("Thinking it over");
    await held;
  });
  h = await startHarness({ runner });
  const s = h.emulator.state;
  h.emulator.userMessage(s.general, "take your time", { mentionsBot: true });
  await waitFor(() => runner.inbounds.length === 1);
  await h.adapter.stop();
  return h;
}

const DEFERRED = 5;

describe("Discord adapter: an interaction that comes while the process stops", () => {
  it("tells the person to try again, since Discord will not send it again", async () => {
    const h = await stopping();
    const s = h.emulator.state;
    const rec = h.emulator.slash("ask", { question: "and now?" }, s.general, s.alice.id);
    await waitFor(() => rec.callbacks.length > 0);
    expect(rec.callbacks).toEqual([4]);
    expect(s.findMessage(rec.originalId ?? "")?.content).toBe(RESTARTING);
    expect(h.runner.commands).toEqual([]);
  });

  it("leaves a command a live replica claimed to that replica", async () => {
    const h = await stopping();
    const s = h.emulator.state;
    const rec = h.emulator.slash("ask", { question: "and now?" }, s.general, s.alice.id);
    // The live replica's claim, as commands.ts takes it (the two share the store).
    expect(await h.runner.firstSight(`discord:i:${rec.id}`)).toBe(true);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(rec.callbacks).toEqual([]);
  });

  it("shows nothing twice when a live replica acknowledged the interaction first", async () => {
    const h = await stopping();
    const s = h.emulator.state;
    const rec = h.emulator.slash("ask", { question: "and now?" }, s.general, s.alice.id);
    const res = await fetch(`${h.emulator.apiUrl}/v10/interactions/${rec.id}/${rec.token}/callback`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ type: DEFERRED }),
    });
    expect(res.status).toBe(204);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(rec.callbacks).toEqual([DEFERRED]);
  });
});

describe("Discord adapter: a turn no handler waits for, writing while the process stops", () => {
  it("writes its answer through the drain: REST closes with the adapter's close, after it", async () => {
    h = await startHarness({ runner: new ScriptedRunner(async () => undefined) });
    const s = h.emulator.state;
    // A turn resumed by a click or taken over: the runtime drains it, the adapter never saw it.
    const sink = h.adapter
      .replyFor(`discord:${s.guildId}:${s.general}`, { messages: [], channel: s.general })
      .stream();
    await h.adapter.stop();
    sink.write("Finished during the drain.");
    await sink.finish();
    expect(h.emulator.botMessages(s.general).map((m) => m.content)).toContain("Finished during the drain.");
    await h.adapter.close();
    expect(h.adapter.client.token).toBeNull();
  });
});
