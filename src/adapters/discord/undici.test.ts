// Slack first, as in a process running both adapters: @slack/socket-mode swaps the global undici dispatcher.
import "@slack/bolt";
import { afterEach, expect, it } from "vitest";
import { waitFor } from "../../../test/emulators/discord/index.js";
import { answer, type Harness, ScriptedRunner, startHarness } from "./harness.test-helper.js";

let h: Harness;

afterEach(async () => {
  await h?.close();
});

it("uploads a Discord attachment with @slack/bolt loaded in the same process", async () => {
  h = await startHarness({
    runner: new ScriptedRunner(async (inbound) => {
      await answer("Your file:")(inbound);
      await inbound.reply.upload({
        title: "report",
        filename: "report.txt",
        mimeType: "text/plain",
        bytes: new TextEncoder().encode("all good"),
      });
    }),
  });
  const asked = h.emulator.userMessage(h.emulator.state.general, "send the report", { mentionsBot: true });
  await waitFor(() => h.runner.done.length === 1);
  const files = h.emulator.botMessages(asked.id).flatMap((m) => m.attachments);
  expect(files.map((f) => [f.filename, f.data.toString()])).toEqual([["report.txt", "all good"]]);
});
