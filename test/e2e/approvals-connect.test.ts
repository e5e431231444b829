/**
 * "Approve for this thread" in a Slack Connect thread, through the real app against the
 * emulators: the thread is one conversation of people of two organizations, and an
 * approval covers the people of the asker's organization only.
 */
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, startApp } from "../../src/app.js";
import { LlmEmulator } from "../emulators/llm/index.js";
import { SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { appEnv } from "../support/app-env.js";
import { scenario, slackQuestions, workspace } from "../support/approvals.js";
import { actionsOf } from "../support/slack-actions.js";

describe("approvals for a Slack Connect thread", () => {
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let app: App;
  let dir: string;
  let root: string;

  beforeAll(async () => {
    ({ dir, root } = workspace("llm:\n  maxRetries: 0\nslack:\n  nativeStreaming: false\n"));
    llm = await LlmEmulator.start({ responder: scenario(root) });
    slack = await SlackEmulator.start();
    slack.externalUser("U_EXT", "T_OTHER");
    app = await startApp({ env: appEnv({ dir, llm, slack }), cwd: dir });
  }, 60_000);

  afterAll(async () => {
    await app?.stop();
    await slack?.stop();
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const { question, click } = slackQuestions(() => slack);
  const questions = (ts: string) => slack.botReplies("C1", ts).filter((r) => actionsOf(r).length > 0);

  it("asks the partner organization's people again after the asker approved a tool for the thread, and not the asker's colleagues", async () => {
    const m = slack.mention("C1", "U_ALICE", "please write note-1");
    const { message: q } = await question(m);
    click(q, "U_ALICE", "approve_thread");
    await waitFor(() => existsSync(join(root, "note-1.txt")));
    await app.dispatcher.settled();

    // Someone of the other organization in the same thread: asked, and nothing written unasked.
    slack.post("C1", "U_EXT", "now write note-2", { threadTs: m.ts });
    const asked = await waitFor(() => questions(m.ts).find((r) => r.ts !== q.ts));
    expect(asked.text).toContain("contents of note-2");
    expect(existsSync(join(root, "note-2.txt"))).toBe(false);
    click(asked, "U_EXT", "approve");
    await waitFor(() => existsSync(join(root, "note-2.txt")));
    await app.dispatcher.settled();

    // Alice's colleague, of the bot's own workspace: the thread's approval covers them.
    const before = questions(m.ts).length;
    slack.post("C1", "U_CAROL", "now write note-3", { threadTs: m.ts });
    await waitFor(() => existsSync(join(root, "note-3.txt")));
    await app.dispatcher.settled();
    expect(readFileSync(join(root, "note-3.txt"), "utf8")).toBe("contents of note-3");
    expect(questions(m.ts)).toHaveLength(before);
  }, 30_000);
});
