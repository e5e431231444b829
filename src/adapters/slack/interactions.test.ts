import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../../../test/emulators/slack/adapter-harness.js";
import { waitFor } from "../../../test/emulators/slack/index.js";
import { useTracer } from "../../core/spans.js";
import { traceInMemory } from "../../ops/traced.test-helper.js";
import { REFUSED_NOTE } from "../../runtime/access.js";
import { NO_THREAD } from "./commands.js";
import { toMrkdwn } from "./mrkdwn.js";
import { DEFAULT_PROMPTS } from "./suggested-prompts.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const PROMPTS = [
  { title: "Summarise", message: "Summarise this channel" },
  { title: "Search issues", message: "Find open issues about login" },
];

describe("Slack adapter: assistant threads", () => {
  it("offers the configured prompts, shows status while working, sets the title, clears the status", async () => {
    h = await startHarness({ config: { slack: { suggestedPrompts: PROMPTS } } });
    h.runner.script = async (inbound) => {
      await inbound.reply.status("Calling github__search_issues…");
      const sink = inbound.reply.stream();
      sink.write("Found 3 issues.");
      await sink.finish();
      await inbound.reply.title("Login issues");
    };
    const { channel, threadTs } = h.emu.startAssistantThread("U_ALICE");
    await waitFor(() => h!.emu.state.assistant.get(`${channel}:${threadTs}`)?.prompts.length);
    h.emu.dm("U_ALICE", "find login issues", { threadTs });
    const thread = await waitFor(() => {
      const t = h!.emu.state.assistant.get(`${channel}:${threadTs}`);
      return t && t.titles.length > 0 && t;
    });
    expect(thread.prompts[0]?.prompts).toEqual(PROMPTS);
    expect(thread.statuses).toEqual(["is thinking…", "Calling github__search_issues…", ""]);
    expect(thread.titles).toEqual(["Login issues"]);
    expect(h.emu.botReplies(channel, threadTs).map((m) => m.text)).toEqual(["Found 3 issues."]);
    expect(h.runner.inbounds[0]?.key).toBe(`slack:T1:${channel}:${threadTs}`);
  });
});

describe("Slack adapter: the assistant pane without configured prompts", () => {
  it("never opens empty: it offers the four default prompts", async () => {
    h = await startHarness();
    const { channel, threadTs } = h.emu.startAssistantThread("U_ALICE");
    const thread = await waitFor(
      () =>
        h!.emu.state.assistant.get(`${channel}:${threadTs}`)?.prompts.length &&
        h!.emu.state.assistant.get(`${channel}:${threadTs}`),
    );
    expect(thread.prompts[0]?.prompts).toEqual(DEFAULT_PROMPTS);
    expect(DEFAULT_PROMPTS).toHaveLength(4);
  });
});

describe("Slack adapter: the slash command", () => {
  const lastEphemeral = (h: Harness) => waitFor(() => h.emu.state.ephemerals.at(-1));

  it("answers help with the usage, as an ephemeral message", async () => {
    h = await startHarness();
    h.emu.slash("/switchboard", "help", "U_ALICE", "C1");
    const e = await lastEphemeral(h);
    expect(e.via).toBe("response_url");
    expect(e.text).toContain("/switchboard ask &lt;question&gt;");
    expect(h.runner.commands).toHaveLength(0);
  });

  it("answers through the workspace's write scheduler, as every write goes", async () => {
    const spans = traceInMemory("slack");
    try {
      h = await startHarness();
      h.emu.slash("/switchboard", "help", "U_ALICE", "C1");
      await lastEphemeral(h);
      const span = await waitFor(() => spans().find((x) => x.name === "slack response_url"));
      expect(span.attributes["switchboard.write.platform"]).toBe("slack");
    } finally {
      useTracer(undefined);
    }
  });

  it("explains itself when the subcommand is unknown or missing", async () => {
    h = await startHarness();
    h.emu.slash("/switchboard", "frobnicate", "U_ALICE", "C1");
    expect((await lastEphemeral(h)).text).toContain("I do not know `frobnicate`");
  });

  for (const name of ["tools", "new", "compact", "title", "model"] as const) {
    it(`runs ${name} on the user's latest thread and shows the answer only to them`, async () => {
      h = await startHarness();
      const m = h.emu.mention("C1", "U_ALICE", "hello");
      await waitFor(() => h!.emu.botReplies("C1", m.ts).length === 1);
      h.emu.slash("/switchboard", name === "model" ? "model gpt-4.1" : name, "U_ALICE", "C1");
      const e = await lastEphemeral(h);
      expect(e.text).toBe(name === "model" ? "ran model gpt-4.1" : `ran ${name}`);
      expect(e.user).toBe("U_ALICE");
      expect(h.runner.commands[0]).toMatchObject({ name, key: `slack:T1:C1:${m.ts}`, platform: "slack" });
    });
  }

  for (const text of ["new", "compact", "title", "summary", "model gpt-4.1"]) {
    it(`says it does not know the thread for "${text}" when the user has no thread with it yet`, async () => {
      h = await startHarness();
      h.emu.slash("/switchboard", text, "U_ALICE", "C1");
      expect((await lastEphemeral(h)).text).toBe(toMrkdwn(NO_THREAD));
      expect(h.runner.commands).toHaveLength(0);
    });
  }

  for (const text of ["tools", "model"]) {
    it(`answers "${text}" without a thread`, async () => {
      h = await startHarness();
      h.emu.slash("/switchboard", text, "U_ALICE", "C1");
      expect((await lastEphemeral(h)).text).toBe(`ran ${text}`);
      expect(h.runner.commands[0]).toMatchObject({ name: text });
    });
  }

  it("ask posts the question in the channel and answers in its thread", async () => {
    h = await startHarness();
    h.emu.slash("/switchboard", "ask what is the weather?", "U_ALICE", "C1");
    await waitFor(() => h!.runner.inbounds.length === 1);
    const question = h.emu.state.history("C1").at(-1);
    expect(question?.text).toBe("<@U_ALICE> asked: what is the weather?");
    await waitFor(() => h!.emu.botReplies("C1", question!.ts).length === 1);
    expect(h.runner.inbounds[0]).toMatchObject({
      text: "what is the weather?",
      key: `slack:T1:C1:${question!.ts}`,
    });
  });

  it("ask takes &, < and > as typed: shown once escaped, asked as the characters", async () => {
    h = await startHarness();
    h.emu.slash("/switchboard", "ask is 3 < 5 & 7 > 6?", "U_ALICE", "C1");
    await waitFor(() => h!.runner.inbounds.length === 1);
    const question = h.emu.state.history("C1").at(-1);
    expect(question?.text).toBe("<@U_ALICE> asked: is 3 &lt; 5 &amp; 7 &gt; 6?");
    expect(h.runner.inbounds[0]?.text).toBe("is 3 < 5 & 7 > 6?");
    h.emu.slash("/switchboard", "model gpt-4o&mini", "U_ALICE", "C1");
    await waitFor(() => h!.runner.commands.length === 1);
    expect(h.runner.commands[0]).toMatchObject({ name: "model", arg: "gpt-4o&mini" });
  });

  it("tells only the asker when the access lists refuse their ask or prompt: nothing is posted", async () => {
    h = await startHarness();
    h.runner.admit = (who) => (who.user.id === "U_BOB" ? "silent" : "yes");
    const before = h.emu.state.history("C1").length;
    h.emu.slash("/switchboard", "ask what is the secret plan?", "U_BOB", "C1");
    const told = await lastEphemeral(h);
    expect(told).toMatchObject({ user: "U_BOB", text: toMrkdwn(REFUSED_NOTE) });
    h.emu.slash("/switchboard", "prompt summarise", "U_BOB", "C1");
    await waitFor(() => h!.emu.state.ephemerals.length === 2);
    expect(h.emu.state.history("C1")).toHaveLength(before);
    expect(h.runner.inbounds).toEqual([]);
  });

  it("makes the thread of an ask the asker's latest, so that a stop right after acts on it", async () => {
    h = await startHarness();
    // An earlier thread with the bot in this channel.
    const earlier = h.emu.mention("C1", "U_ALICE", "hello");
    await waitFor(() => h!.emu.botReplies("C1", earlier.ts).length === 1);
    h.emu.slash("/switchboard", "ask what changed?", "U_ALICE", "C1");
    await waitFor(() => h!.runner.inbounds.length === 2);
    const question = h.emu.state.history("C1").at(-1)!;
    h.emu.slash("/switchboard", "stop", "U_ALICE", "C1");
    await waitFor(() => h!.runner.commands.length === 1);
    expect(h.runner.commands[0]).toMatchObject({ name: "stop", key: `slack:T1:C1:${question.ts}` });
    expect(question.ts).not.toBe(earlier.ts);
  });

  it("uses the configured command name", async () => {
    h = await startHarness({ config: { slack: { slashCommand: "/sb" } } });
    h.emu.slash("/sb", "help", "U_ALICE", "C1");
    expect((await lastEphemeral(h)).text).toContain("/sb ask");
  });
});

describe("Slack adapter: files, failures, connection", () => {
  it("uploads an artifact into the thread once, with its title", async () => {
    h = await startHarness();
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
    h.runner.script = async (inbound) => {
      const sink = inbound.reply.stream();
      sink.write("Here is the chart.");
      await sink.finish();
      await inbound.reply.upload({
        title: "Chart",
        filename: "chart.png",
        mimeType: "image/png",
        bytes: png,
      });
    };
    const m = h.emu.mention("C1", "U_ALICE", "draw");
    const withFile = await waitFor(() => h!.emu.botReplies("C1", m.ts).find((r) => r.files.length > 0));
    expect(withFile.files.map((f) => [f.title, f.name, [...f.bytes]])).toEqual([
      ["Chart", "chart.png", [...png]],
    ]);
    expect(h.emu.api.calls.filter((c) => c.method === "files.completeUploadExternal")).toHaveLength(1);
  });

  it("gives the runner the user's files, downloadable with the bot token", async () => {
    h = await startHarness();
    const bytes = new TextEncoder().encode("name,count\na,1\n");
    h.emu.mention("C1", "U_ALICE", "what is in this?", {
      files: [{ name: "data.csv", mimetype: "text/csv", bytes }],
    });
    await waitFor(() => h!.runner.inbounds.length === 1);
    const file = h.runner.inbounds[0]?.attachments[0];
    expect(file).toMatchObject({ name: "data.csv", mimeType: "text/csv", size: bytes.byteLength });
    expect(new TextDecoder().decode(await file!.fetch())).toBe("name,count\na,1\n");
  });

  it("gives up a download of the user's file when the caller aborts it", async () => {
    h = await startHarness();
    h.emu.mention("C1", "U_ALICE", "what is in this?", {
      files: [{ name: "data.csv", mimetype: "text/csv", bytes: new TextEncoder().encode("a,b\n") }],
    });
    await waitFor(() => h!.runner.inbounds.length === 1);
    const file = h.runner.inbounds[0]!.attachments[0]!;
    const aborted = AbortSignal.abort(new Error("the turn was cancelled"));
    await expect(file.fetch(aborted)).rejects.toThrow("the turn was cancelled");
  });

  it("ends the reply with a clear sentence when the turn fails, leaving no placeholder", async () => {
    h = await startHarness();
    h.runner.script = async (inbound) => {
      await inbound.reply.status("Calling everything__echo…");
      const sink = inbound.reply.stream();
      sink.write("Partial answer:\n```ts\nconst x = 1;");
      await sink.fail("The model is not answering right now. Please try again in a minute.");
    };
    const m = h.emu.mention("C1", "U_ALICE", "break");
    await waitFor(
      () => h!.emu.state.find("C1", m.ts)?.reactions.size === 0 && h!.runner.inbounds.length === 1,
    );
    const replies = await waitFor(() => {
      const r = h!.emu.botReplies("C1", m.ts);
      return r.length === 1 && r[0]!.text.endsWith("in a minute.") && r;
    });
    expect(replies[0]?.text).toBe(
      "Partial answer:\n```ts\nconst x = 1;\n```\n\nThe model is not answering right now. Please try again in a minute.",
    );
  });

  it("reconnects after Slack's disconnect message and answers the next mention once", async () => {
    h = await startHarness();
    h.emu.disconnect("refresh_requested");
    await waitFor(() => h!.emu.delivery.connections === 2 && h!.emu.delivery.sockets.size === 1);
    const m = h.emu.mention("C1", "U_ALICE", "still there?");
    await waitFor(() => h!.emu.botReplies("C1", m.ts).length === 1);
    expect(h.runner.inbounds).toHaveLength(1);
    expect(h.adapter.ready()).toBe(true);
  });

  it("works in HTTP mode with signed requests", async () => {
    h = await startHarness({ http: true });
    const m = h.emu.mention("C1", "U_ALICE", "over http");
    await waitFor(() => h!.emu.botReplies("C1", m.ts).length === 1);
    expect(h.runner.inbounds.map((i) => i.text)).toEqual(["over http"]);
    h.emu.slash("/switchboard", "help", "U_ALICE", "C1");
    await waitFor(() => h!.emu.state.ephemerals.some((e) => e.text.includes("/switchboard ask")));
  });
});
