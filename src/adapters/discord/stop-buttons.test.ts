import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test/emulators/discord/index.js";
import { channelOfKey } from "./context.js";
import { type Harness, ScriptedRunner, startHarness } from "./harness.test-helper.js";

let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

const withStop = (components: unknown[] | undefined) => JSON.stringify(components ?? []).includes("stop1");

describe("Discord adapter: Stop under a long answer", () => {
  it("comes off every earlier message once the answer ends, though Discord answers those edits with 429 first", async () => {
    const paragraph = `${"A paragraph of a long answer. ".repeat(20).trim()}\n\n`;
    const earlier: string[] = [];
    h = await startHarness({
      runner: new ScriptedRunner(async (inbound) => {
        inbound.reply.offerStop?.("stop1");
        const sink = inbound.reply.stream();
        const thread = channelOfKey(inbound.key) ?? "";
        for (let i = 0; i < 8; i++) {
          sink.write(paragraph);
          await new Promise((r) => setTimeout(r, 20));
        }
        // Three messages: the first two are written out, each still under Stop.
        const shown = await waitFor(() => {
          const ms = h!.emulator.botMessages(thread);
          return ms.length >= 3 && ms.slice(0, 2).every((m) => withStop(m.components)) && ms;
        });
        for (const m of shown.slice(0, -1)) {
          earlier.push(m.id);
          h!.emulator.rateLimitEdits(200, 3, m.id);
        }
        await sink.finish();
      }),
    });
    const s = h.emulator.state;
    h.emulator.userMessage(s.general, "tell me a lot", { mentionsBot: true });
    await waitFor(() => h!.runner.done.length === 1, { timeoutMs: 20_000 });
    expect(earlier.length).toBeGreaterThanOrEqual(2);
    for (const id of earlier) {
      await waitFor(() => !withStop(s.findMessage(id)?.components), { timeoutMs: 15_000, message: id });
      expect(h.emulator.limiter.hits.filter((x) => x.path.includes(id))).toHaveLength(3);
    }
    const thread = channelOfKey(h.runner.inbounds[0]!.key) ?? "";
    expect(h.emulator.botMessages(thread).filter((m) => withStop(m.components))).toEqual([]);
  });
});
