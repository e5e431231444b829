/**
 * MCP prompts as commands, with the reference everything server's `args-prompt`: listed by
 * /prompts, run by /prompt as if the person had asked its text, in Slack, Discord and the
 * terminal; a prompt that cannot run is a sentence and asks the model nothing.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { submitModal } from "../emulators/discord/components.js";
import { DiscordEmulator, waitFor as waitForDiscord } from "../emulators/discord/index.js";
import { LlmEmulator, type RecordedRequest } from "../emulators/llm/index.js";
import { SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { submitView } from "../emulators/slack/interactive.js";
import { appEnv, type RunningApp, startWithEverything } from "../support/app-env.js";
import { everythingMcp, runChat, scratchConfig } from "../support/chat-process.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";

const responder = (req: RecordedRequest) =>
  isTitleRequest(req)
    ? { text: "Weather" }
    : { text: `Answering: ${lastUserText(req).replace(/^\[[^\]]*\]\s*/, "")}` };
const WEATHER = "What's weather in Paris?";

describe("MCP prompts", () => {
  let llm: LlmEmulator;

  beforeAll(async () => {
    llm = await LlmEmulator.start({ responder });
  });

  afterAll(async () => {
    await llm?.close();
  });

  describe("in Slack", () => {
    let slack: SlackEmulator;
    let running: RunningApp;

    beforeAll(async () => {
      slack = await SlackEmulator.start();
      running = await startWithEverything("llm:\n  maxRetries: 0\n", { llm, slack });
    }, 60_000);

    afterAll(async () => {
      await running?.stop();
      await slack?.stop();
    });

    it("lists them, and asks a prompt's text in the channel, answered in its thread", async () => {
      slack.slash("/switchboard", "prompts", "U_ALICE");
      const listed = await waitFor(() => slack.state.ephemerals.find((e) => e.text.includes("args-prompt")));
      expect(listed.text).toContain("everything/args-prompt");
      expect(listed.text).toContain("city (Name of the city), state?");

      slack.slash("/switchboard", "prompt args-prompt city=Paris", "U_ALICE");
      const opener = await waitFor(() =>
        slack.state.history("C1").find((m) => m.text.includes("asked:") && m.text.includes("Paris")),
      );
      await waitFor(() => slack.botReplies("C1", opener.ts).some((r) => r.text === `Answering: ${WEATHER}`));
    });

    it("offers the servers' prompts in the assistant pane, and runs one written as a message", async () => {
      const { channel, threadTs } = slack.startAssistantThread("U_ALICE");
      const pane = await waitFor(
        () => slack.state.assistant.get(`${channel}:${threadTs}`)?.prompts[0]?.prompts,
      );
      expect(pane.length).toBeGreaterThan(0);
      expect(pane.length).toBeLessThanOrEqual(4);
      const simple = pane.find((p) => p.message === "/prompt everything/simple-prompt");
      expect(simple).toBeDefined();
      // Everything the pane offers runs as it is: none of them needs an argument.
      slack.dm("U_ALICE", simple!.message, { threadTs });
      await waitFor(() =>
        slack
          .botReplies(channel, threadTs)
          .some((r) => r.text === "Answering: This is a simple prompt without arguments."),
      );
    });

    it("asks for the arguments a prompt needs in a modal, asks the model nothing until it is sent, then asks it", async () => {
      await running.app.dispatcher.settled();
      const before = llm.requests.length;
      slack.slash("/switchboard", "prompt args-prompt", "U_BOB");
      const opened = await waitFor(() => slack.openView("U_BOB"));
      const inputs = (
        opened.view.blocks as Array<{
          type: string;
          block_id?: string;
          label?: { text: string };
          optional?: boolean;
        }>
      ).filter((b) => b.type === "input");
      expect(inputs.map((b) => [b.label?.text, b.optional])).toEqual([
        ["city", false],
        ["state", true],
      ]);
      await running.app.dispatcher.settled();
      expect(llm.requests.length).toBe(before);

      const sent = submitView(slack, { user: "U_BOB", inputs: { [inputs[0]!.block_id!]: "Lyon" } });
      expect(await sent.outcome).toEqual({ action: "closed" });
      const opener = await waitFor(() =>
        slack.state.history("C1").find((m) => m.text.includes("asked:") && m.text.includes("Lyon")),
      );
      await waitFor(() =>
        slack.botReplies("C1", opener.ts).some((r) => r.text === "Answering: What's weather in Lyon?"),
      );
    });

    it("tells the person what a prompt written as a message needs, and asks the model nothing", async () => {
      const m = slack.mention("C1", "U_BOB", "hello");
      await waitFor(() => slack.botReplies("C1", m.ts).length > 0);
      await running.app.dispatcher.settled();
      const before = llm.requests.length;
      slack.post("C1", "U_BOB", "/prompt args-prompt", { threadTs: m.ts });
      const told = await waitFor(() =>
        slack.state.ephemerals.find((e) => e.user === "U_BOB" && e.text.includes("needs city")),
      );
      expect(told.text).toContain("The prompt everything/args-prompt needs city=… (Name of the city).");
      await running.app.dispatcher.settled();
      expect(llm.requests.length).toBe(before);
    });
  });

  describe("in Discord", () => {
    let discord: DiscordEmulator;
    let running: RunningApp;

    beforeAll(async () => {
      discord = await DiscordEmulator.start();
      running = await startWithEverything("llm:\n  maxRetries: 0\n", { llm, discord });
    }, 60_000);

    afterAll(async () => {
      await running?.stop();
      await discord?.stop();
    });

    it("offers the prompts while typing, and asks one in a new thread", async () => {
      const s = discord.state;
      const ac = discord.autocomplete("prompt", { name: "args" }, "name", s.general, s.alice.id);
      await waitForDiscord(() => ac.choices);
      expect(ac.choices?.map((c) => c.value)).toEqual(["everything/args-prompt"]);

      const rec = discord.slash("prompt", { name: "args-prompt city=Paris" }, s.general, s.alice.id);
      const opener = await waitForDiscord(() => {
        const m = rec.originalId ? s.findMessage(rec.originalId) : undefined;
        return m?.content ? m : undefined;
      });
      expect(opener.content).toBe(`**alice** asked: ${WEATHER}`);
      await waitForDiscord(() =>
        discord.botMessages(opener.id).find((m) => m.content === `Answering: ${WEATHER}`),
      );
    });

    it("asks for a prompt's missing arguments in a modal and asks the submitted prompt in a new thread", async () => {
      const s = discord.state;
      const rec = discord.slash("prompt", { name: "args-prompt" }, s.general, s.alice.id);
      const modal = await waitForDiscord(() => rec.modal);
      expect(rec.callbacks).toEqual([9]);
      expect(modal.fields.map((f) => f.label)).toEqual(["city", "state"]);
      const sent = submitModal(discord, { interaction: rec, values: { f0: "Lyon" } });
      const opener = await waitForDiscord(() => {
        const m = sent.originalId ? s.findMessage(sent.originalId) : undefined;
        return m?.content ? m : undefined;
      });
      expect(opener.content).toBe("**alice** asked: What's weather in Lyon?");
      await waitForDiscord(() =>
        discord.botMessages(opener.id).find((m) => m.content === "Answering: What's weather in Lyon?"),
      );
    });

    it("tells only the person when a prompt does not exist", async () => {
      const s = discord.state;
      const rec = discord.slash("prompt", { name: "no-such-prompt" }, s.general, s.bob.id);
      const told = await waitForDiscord(() =>
        discord
          .botMessages(s.general)
          .find((m) => m.interactionId === rec.id && m.content.startsWith("There is no prompt")),
      );
      expect(told.flags & 64).toBe(64);
      expect(told.content).toContain('There is no prompt named "no-such-prompt". Available: ');
    });
  });

  describe("in the terminal", () => {
    it("asks a prompt's text as the next message", async () => {
      const dir = scratchConfig("llm:\n  maxRetries: 0\n", everythingMcp);
      try {
        const run = await runChat(
          ["/prompt args-prompt city=Paris", "/prompt args-prompt"],
          appEnv({ dir, llm }),
        );
        expect(run.code).toBe(0);
        expect(run.stdout).toContain(`Answering: ${WEATHER}`);
        expect(run.stdout).toContain("The prompt everything/args-prompt needs city=…");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, 90_000);
  });
});
