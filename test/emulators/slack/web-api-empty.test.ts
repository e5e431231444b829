import { afterEach, describe, expect, it } from "vitest";
import { SlackEmulator } from "./index.js";
import { rawCall } from "./raw-call.js";

let emu: SlackEmulator | undefined;
afterEach(async () => {
  await emu?.stop();
  emu = undefined;
});

describe("Slack emulator: a message with no text", () => {
  it("refuses chat.update to empty or whitespace text without blocks (no_text), and the message keeps its text", async () => {
    emu = await SlackEmulator.start();
    const root = emu.mention("C1", "U_ALICE", "a question");
    const posted = await rawCall<{ ts: string }>(emu, "chat.postMessage", {
      channel: "C1",
      thread_ts: root.ts,
      text: "_Calling echo…_",
    });
    expect(posted.ok).toBe(true);
    const update = (args: Record<string, string>) =>
      rawCall(emu!, "chat.update", { channel: "C1", ts: posted.ts, ...args });
    expect(await update({ text: "" })).toMatchObject({ ok: false, error: "no_text" });
    expect(await update({ text: "\n\n" })).toMatchObject({ ok: false, error: "no_text" });
    expect(await update({ markdown_text: " \n" })).toMatchObject({ ok: false, error: "no_text" });
    expect(await update({ text: "", blocks: "[]" })).toMatchObject({ ok: false, error: "no_text" });
    expect(emu.state.find("C1", posted.ts)?.text).toBe("_Calling echo…_");
    expect(emu.state.find("C1", posted.ts)?.edits).toEqual([]);
    // Blocks are content: their text is only the notification's.
    const blocks = JSON.stringify([{ type: "markdown", text: "The answer." }]);
    expect(await update({ text: "", blocks })).toMatchObject({ ok: true });
    expect(await update({ markdown_text: "The answer, again." })).toMatchObject({ ok: true });
  });

  it("refuses chat.postMessage of whitespace alone, as a post with no text", async () => {
    emu = await SlackEmulator.start();
    expect(await rawCall(emu, "chat.postMessage", { channel: "C1", text: "\n" })).toMatchObject({
      ok: false,
      error: "no_text",
    });
    expect(await rawCall(emu, "chat.postMessage", { channel: "C1", markdown_text: "" })).toMatchObject({
      ok: false,
      error: "no_text",
    });
  });
});
