import { afterEach, describe, expect, it } from "vitest";
import { SlackEmulator } from "./index.js";
import { rawCall } from "./raw-call.js";

let emu: SlackEmulator | undefined;
afterEach(async () => {
  await emu?.stop();
  emu = undefined;
});

describe("Slack emulator: an assistant thread's status", () => {
  it("shows the last status set until the app posts in the thread, as Slack clears it then", async () => {
    emu = await SlackEmulator.start();
    const { channel, threadTs } = emu.startAssistantThread("U_ALICE");
    const other = emu.startAssistantThread("U_ALICE");
    const shown = () => emu!.state.assistant.get(`${channel}:${threadTs}`)?.status;
    const setStatus = (status: string) =>
      rawCall(emu!, "assistant.threads.setStatus", { channel_id: channel, thread_ts: threadTs, status });
    const post = (thread: string) =>
      rawCall(emu!, "chat.postMessage", { channel, thread_ts: thread, text: "An answer." });

    expect(await setStatus("is thinking…")).toMatchObject({ ok: true });
    expect(shown()).toBe("is thinking…");
    // The person writing, or the app answering in another thread, leaves it.
    emu.dm("U_ALICE", "one more thing", { threadTs });
    expect((await post(other.threadTs)).ok).toBe(true);
    expect(shown()).toBe("is thinking…");

    expect((await post(threadTs)).ok).toBe(true);
    expect(shown()).toBe("");

    // A native stream's start is a post in the thread too.
    await setStatus("is thinking…");
    const started = await rawCall(emu, "chat.startStream", {
      channel,
      thread_ts: threadTs,
      markdown_text: "Streaming",
    });
    expect(started.ok).toBe(true);
    expect(shown()).toBe("");

    await setStatus("Calling github__search_issues…");
    await setStatus("");
    expect(shown()).toBe("");
    expect(emu.state.assistant.get(`${channel}:${threadTs}`)?.statuses).toEqual([
      "is thinking…",
      "is thinking…",
      "Calling github__search_issues…",
      "",
    ]);
  });
});
