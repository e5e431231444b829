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

describe("Slack emulator: an assistant thread's status timeout", () => {
  it("clears a status two minutes after it was set without a message, and one set again shows two minutes more", async () => {
    emu = await SlackEmulator.start();
    let now = Date.now();
    emu.state.now = () => now;
    const { channel, threadTs } = emu.startAssistantThread("U_ALICE");
    const shown = () => emu!.state.assistant.get(`${channel}:${threadTs}`)?.status;
    const setStatus = (status: string) =>
      rawCall(emu!, "assistant.threads.setStatus", { channel_id: channel, thread_ts: threadTs, status });

    expect(await setStatus("Calling github__search_issues…")).toMatchObject({ ok: true });
    now += 119_000;
    expect(shown()).toBe("Calling github__search_issues…");
    now += 1_000;
    expect(shown()).toBe("");

    // Set again (the same status) before the two minutes end, it shows on.
    await setStatus("Calling github__search_issues…");
    now += 90_000;
    await setStatus("Calling github__search_issues…");
    now += 90_000;
    expect(shown()).toBe("Calling github__search_issues…");
    now += 30_000;
    expect(shown()).toBe("");
  });

  it("takes the timeout from the emulator's options", async () => {
    emu = await SlackEmulator.start({ assistantStatusTimeoutMs: 50 });
    let now = Date.now();
    emu.state.now = () => now;
    const { channel, threadTs } = emu.startAssistantThread("U_ALICE");
    await rawCall(emu, "assistant.threads.setStatus", {
      channel_id: channel,
      thread_ts: threadTs,
      status: "is thinking…",
    });
    expect(emu.state.assistant.get(`${channel}:${threadTs}`)?.status).toBe("is thinking…");
    now += 50;
    expect(emu.state.assistant.get(`${channel}:${threadTs}`)?.status).toBe("");
  });
});
