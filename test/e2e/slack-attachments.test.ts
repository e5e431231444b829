import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, startApp } from "../../src/app.js";
import { LlmEmulator } from "../emulators/llm/index.js";
import { SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { forwardToBot, webhookPost } from "../emulators/slack/shared-messages.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";

let llm: LlmEmulator;
let slack: SlackEmulator;
let app: App | undefined;
let dir: string;

beforeAll(async () => {
  llm = await LlmEmulator.start({
    responder: (req) => (isTitleRequest(req) ? { text: "Alerts" } : { text: "Looked at it." }),
  });
  slack = await SlackEmulator.start();
  dir = scratchConfig("");
  app = await startApp({ env: appEnv({ dir, llm, slack }), cwd: dir });
}, 60_000);

afterAll(async () => {
  await app?.stop();
  rmSync(dir, { recursive: true, force: true });
  await slack?.stop();
  await llm?.close();
});

/** The model request whose last user message holds `words`, once the bot answered. */
async function requestWith(words: string) {
  const found = () => llm.requests.find((r) => !isTitleRequest(r) && lastUserText(r).includes(words));
  await waitFor(found, { timeoutMs: 20_000 });
  return found();
}

describe("Slack messages whose words are in attachments (real app, emulated Slack and LLM)", () => {
  it("reads an alert's attachment when mentioned in its thread", async () => {
    const alert = webhookPost(slack, "C1", [
      {
        color: "danger",
        fallback: "[FIRING:1] HighMemory web-1",
        title: "[FIRING:1] HighMemory web-1",
        title_link: "https://alerts.example.com/#/alerts?receiver=ops",
        text: "Memory usage on web-1 is above 95% for 10 minutes &amp; rising.",
        fields: [{ title: "severity", value: "critical", short: true }],
      },
    ]);
    slack.mention("C1", "U_ALICE", "what does this alert mean?", { threadTs: alert.ts });
    const sent = JSON.stringify((await requestWith("what does this alert mean?"))?.messages);
    expect(sent).toContain("Memory usage on web-1 is above 95% for 10 minutes & rising.");
    expect(sent).toContain("Alertmanager: [attachment]");
    expect(sent).toContain("[FIRING:1] HighMemory web-1 (https://alerts.example.com/#/alerts?receiver=ops)");
    expect(sent).toContain("severity: critical");
  });

  it("reads a message forwarded to its DM as who said it and what", async () => {
    const m = forwardToBot(slack, "U_BOB", {
      author: "Carol",
      channelName: "ops",
      text: "The nightly backup failed: disk full on db-2",
    });
    const asked = await requestWith("The nightly backup failed: disk full on db-2");
    expect(lastUserText(asked!)).toContain(
      "[shared message from Carol in #ops]\nThe nightly backup failed: disk full on db-2",
    );
    await waitFor(() => slack.botReplies(m.channel, m.ts).some((r) => r.text === "Looked at it."), {
      timeoutMs: 20_000,
    });
  });
});
