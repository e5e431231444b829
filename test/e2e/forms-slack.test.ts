/**
 * A server asks the person something while its tool runs (MCP elicitation), through the
 * real app, @slack/bolt against the Slack emulator, and server-everything: its
 * `trigger-elicitation-request` form opens as a Slack modal from a button in the thread;
 * only the asker may open and answer it; answers Slack lets through but the schema refuses
 * stay in the modal with the field's error; submitted values reach the tool's result;
 * decline and cancel reach the server; `trigger-url-elicitation` shows a link, and a link
 * nobody finishes within the expiry is cancelled at the server.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, startApp } from "../../src/app.js";
import { LlmEmulator } from "../emulators/llm/index.js";
import { type EmuMessage, SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { clickAction, submitView } from "../emulators/slack/interactive.js";
import { appEnv } from "../support/app-env.js";
import { formScenario, formsWorkspace } from "../support/forms-scenario.js";
import { untilQuiet } from "../support/quiet.js";
import { actionsOf, type SlackAction } from "../support/slack-actions.js";

describe("a server's form in Slack", () => {
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let app: App;
  let dir: string;

  beforeAll(async () => {
    dir = formsWorkspace("llm:\n  maxRetries: 0\nslack:\n  nativeStreaming: false\n");
    llm = await LlmEmulator.start({ responder: formScenario });
    slack = await SlackEmulator.start();
    app = await startApp({ env: appEnv({ dir, llm, slack }), cwd: dir });
  }, 60_000);

  afterAll(async () => {
    await app?.stop();
    await slack?.stop();
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const asked = new Map<string, SlackAction[]>();
  const question = (m: EmuMessage) =>
    waitFor(() => {
      const q = slack.botReplies("C1", m.ts).find((r) => actionsOf(r).length > 0);
      if (q && !asked.has(q.ts)) asked.set(q.ts, actionsOf(q));
      return q;
    });
  const click = (q: EmuMessage, user: string, value: string) => {
    const action = asked.get(q.ts)?.find((a) => a.value === value);
    if (!action) throw new Error(`no ${value} button on the question`);
    return clickAction(slack, {
      user,
      channel: "C1",
      messageTs: q.ts,
      actionId: action.action_id,
      value,
      blockId: action.block_id,
      ...(action.url ? { url: action.url } : {}),
    });
  };
  const toolSaid = (m: EmuMessage) =>
    waitFor(() => slack.botReplies("C1", m.ts).find((r) => r.text.startsWith("Tool said:"))?.text);

  it("opens the requested fields as a modal for the asker only; the schema's errors stay in it; the values reach the tool", async () => {
    const m = slack.mention("C1", "U_ALICE", "form please");
    const q = await question(m);
    expect(q.text).toContain("asks alice to fill in a form");
    expect(q.text).toContain("Please provide inputs for the following fields:");
    expect(asked.get(q.ts)?.map((a) => a.value)).toEqual(["form", "decline", "cancel"]);

    click(q, "U_BOB", "form");
    await waitFor(() => slack.state.ephemerals.find((e) => e.user === "U_BOB"));
    expect(slack.state.ephemerals.filter((e) => e.user === "U_BOB").map((e) => e.text)).toEqual([
      "Only alice can answer this, since it is their request; nothing changed.",
    ]);
    expect(slack.openView("U_BOB")).toBeUndefined();

    click(q, "U_ALICE", "form");
    const opened = await waitFor(() => slack.openView("U_ALICE"));
    const blocks = opened.view.blocks as Array<{
      type: string;
      block_id?: string;
      label?: { text: string };
      element?: { type: string };
    }>;
    const inputs = blocks.filter((b) => b.type === "input");
    expect(inputs).toHaveLength(13);
    expect(inputs.map((b) => b.element?.type)).toEqual([
      "plain_text_input",
      "radio_buttons",
      "plain_text_input",
      "email_text_input",
      "url_text_input",
      "datepicker",
      "number_input",
      "number_input",
      "static_select",
      "multi_static_select",
      "static_select",
      "multi_static_select",
      "static_select",
    ]);
    const id = (label: string) => inputs.find((b) => b.label?.text === label)?.block_id ?? "";

    // Slack lets an empty optional multi-select through; the schema wants at least one.
    const first = submitView(slack, {
      user: "U_ALICE",
      inputs: { [id("String")]: "Ada Lovelace", [id("Untitled Multiple Select Enum")]: [] },
    });
    expect(await first.outcome).toEqual({
      action: "errors",
      errors: {
        [id("Untitled Multiple Select Enum")]: "Untitled Multiple Select Enum: choose at least one.",
      },
    });
    expect(slack.openView("U_ALICE")?.open).toBe(true);

    const second = submitView(slack, {
      user: "U_ALICE",
      inputs: {
        [id("Untitled Multiple Select Enum")]: ["Piano", "Drums"],
        [id("String with email format")]: "ada@example.com",
        [id("Integer")]: "7",
        [id("Boolean")]: "true",
        [id("String with date format")]: "1815-12-10",
      },
    });
    expect(await second.outcome).toEqual({ action: "closed" });

    const said = await toolSaid(m);
    expect(said).toContain("✅ User provided the requested information!");
    expect(said).toContain("- Name: Ada Lovelace");
    expect(said).toContain("- Email: ada@example.com");
    expect(said).toContain("- Favorite Integer: 7");
    expect(said).toContain("- Birthdate: 1815-12-10");
    expect(said).toContain("- Agreed to terms: true");
    expect(said).toContain('"Piano"');
    await app.dispatcher.settled();
    await untilQuiet(slack.api.calls);
    const settled = slack.state.find("C1", q.ts)!;
    expect(actionsOf(settled)).toEqual([]);
    expect(settled.text).toBe("✅ alice filled in *everything*'s form.");
  });

  it("tells the server when the asker declines, and when they cancel", async () => {
    const declined = slack.mention("C1", "U_ALICE", "form please");
    click(await question(declined), "U_ALICE", "decline");
    expect(await toolSaid(declined)).toContain("❌ User declined to provide the requested information.");

    const cancelled = slack.mention("C1", "U_ALICE", "form please");
    const q = await question(cancelled);
    click(q, "U_ALICE", "cancel");
    expect(await toolSaid(cancelled)).toContain("⚠️ User cancelled the elicitation dialog.");
    await app.dispatcher.settled();
    await untilQuiet(slack.api.calls);
    expect(slack.state.find("C1", q.ts)!.text).toBe("✖️ alice cancelled *everything*'s form.");

    // A click after the answer changes nothing and says so.
    click(q, "U_ALICE", "form");
    await waitFor(() =>
      slack.state.ephemerals.find(
        (e) => e.user === "U_ALICE" && e.text.startsWith("This form is no longer waiting"),
      ),
    );
  });

  it("shows a page to open as a link button, and the click on it answers", async () => {
    const m = slack.mention("C1", "U_ALICE", "link please");
    const q = await question(m);
    expect(q.text).toContain("asks alice to open a page on *example.com*");
    expect(q.text).toContain("Sign the terms on our site.");
    const link = asked.get(q.ts)?.find((a) => a.value === "open");
    expect(link?.url).toBe("https://example.com/flow");
    click(q, "U_ALICE", "open");
    expect(await toolSaid(m)).toContain("✅ User completed the URL elicitation flow.");
  });

  it("runs a call again once the page its server required first is finished, and not on a mere click of the link", async () => {
    const m = slack.mention("C1", "U_ALICE", "prerequisite please");
    const first = await question(m);
    expect(first.text).toContain("open a page on *modelcontextprotocol.io*");
    expect(first.text).toContain("Press Done once you have finished there.");
    // Opening the page is not finishing it: the call waits.
    click(first, "U_ALICE", "open");
    await untilQuiet(slack.api.calls);
    expect(slack.botReplies("C1", m.ts).some((r) => r.text.startsWith("Tool said:"))).toBe(false);
    click(first, "U_ALICE", "done");
    // The call is run again, and this time the server asks for its page in the usual way.
    const second = await waitFor(() =>
      slack
        .botReplies("C1", m.ts)
        .find((r) => r.ts !== first.ts && actionsOf(r).some((a) => a.value === "done")),
    );
    asked.set(second.ts, actionsOf(second));
    expect(second.text).toContain("Now the real page.");
    click(second, "U_ALICE", "done");
    expect(await toolSaid(m)).toContain("✅ User completed the URL elicitation flow.");
    expect(slack.state.find("C1", first.ts)!.text).toBe(
      "✅ alice finished the page on *modelcontextprotocol.io* for *everything*.",
    );
  });
});

describe("a page to open in Slack that nobody finishes", () => {
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let app: App;
  let dir: string;

  beforeAll(async () => {
    dir = formsWorkspace("llm:\n  maxRetries: 0\nslack:\n  nativeStreaming: false\n", 10_000);
    llm = await LlmEmulator.start({ responder: formScenario });
    slack = await SlackEmulator.start();
    app = await startApp({ env: appEnv({ dir, llm, slack }), cwd: dir });
  }, 60_000);

  afterAll(async () => {
    await app?.stop();
    await slack?.stop();
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("cancels it at the expiry: the server is told cancel, the message says so, a late click changes nothing", async () => {
    const m = slack.mention("C1", "U_ALICE", "link please");
    const q = await waitFor(() => slack.botReplies("C1", m.ts).find((r) => actionsOf(r).length > 0));
    const done = actionsOf(q).find((a) => a.value === "done")!;
    expect(q.text).toContain("Only alice can answer; it waits 10 seconds.");
    // The answer, whether the writer's pacing put it in one message or more.
    const answer = () =>
      slack
        .botReplies("C1", m.ts)
        .filter((r) => r.ts !== q.ts)
        .map((r) => r.text)
        .join("");
    await waitFor(() => answer().includes("Raw result"), { timeoutMs: 20_000 });
    await app.dispatcher.settled();
    await untilQuiet(slack.api.calls);
    const said = answer();
    // server-everything says what it received: its words for a cancel, and the raw result.
    expect(said).toMatch(/^Tool said: ⚠️ User cancelled the URL elicitation \(Elicitation ID: [\w-]+\)\./);
    expect(said).toMatch(/Raw result: \{\s*"action": "cancel"\s*\}$/);
    const settled = slack.state.find("C1", q.ts)!;
    expect(actionsOf(settled)).toEqual([]);
    expect(settled.text).toBe(
      "⌛ Nobody answered the page on *example.com* for *everything* within 10 seconds, so it was cancelled.",
    );
    clickAction(slack, {
      user: "U_ALICE",
      channel: "C1",
      messageTs: q.ts,
      actionId: done.action_id,
      value: "done",
      blockId: done.block_id,
    });
    await waitFor(() => slack.state.ephemerals.find((e) => e.user === "U_ALICE"));
    expect(slack.state.ephemerals.map((e) => e.text)).toEqual([
      "This form is no longer waiting for an answer: the tool call that asked for it has ended.",
    ]);
    expect(answer()).toBe(said);
  }, 30_000);
});
