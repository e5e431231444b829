/**
 * `npm start` against platforms it cannot use: the error names the address, the cause and
 * the setting to check (errors that say where and why).
 */
import { rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { startApp } from "../../src/app.js";
import { SlackEmulator } from "../emulators/slack/index.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";
import { closedPort } from "../support/ports.js";

describe("starting against a platform it cannot use", () => {
  const dir = scratchConfig("");
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("names Slack's address and why it could not be reached", async () => {
    const port = await closedPort();
    const env = {
      ...appEnv({ dir, llm: `http://127.0.0.1:${port}/v1` }),
      SLACK_BOT_TOKEN: "xoxb-start",
      SLACK_APP_TOKEN: "xapp-start",
      SLACK_API_URL: `http://127.0.0.1:${port}/api/`,
    };
    await expect(startApp({ env, cwd: dir })).rejects.toThrow(
      `Could not connect to Slack at http://127.0.0.1:${port}/api/: connection refused (nothing listens there). Check SLACK_API_URL and the network.`,
    );
  }, 30_000);

  it("says the token was refused when Slack answers invalid_auth", async () => {
    const slack = await SlackEmulator.start();
    try {
      const env = {
        ...appEnv({ dir, llm: "http://127.0.0.1:9/v1", slack }),
        SLACK_BOT_TOKEN: "xoxb-not-the-one",
      };
      await expect(startApp({ env, cwd: dir })).rejects.toThrow(
        /^Slack refused SLACK_BOT_TOKEN \(invalid_auth\)/,
      );
    } finally {
      await slack.stop();
    }
  }, 30_000);

  it("names SLACK_APP_TOKEN when it is the token Slack refuses", async () => {
    const slack = await SlackEmulator.start();
    try {
      const env = {
        ...appEnv({ dir, llm: "http://127.0.0.1:9/v1", slack }),
        SLACK_APP_TOKEN: "xapp-not-the-one",
      };
      await expect(startApp({ env, cwd: dir })).rejects.toThrow(
        /^Slack refused SLACK_APP_TOKEN \(invalid_auth\)\. Check the token/,
      );
    } finally {
      await slack.stop();
    }
  }, 30_000);
});
