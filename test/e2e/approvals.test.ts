/**
 * Tool approvals through the real app, the real SDKs against the emulators and the real
 * reference MCP servers: server-filesystem's `write_file` (annotated destructive) asks in the
 * thread, server-everything's `echo` (read-only) runs at once. Only the asker or an approver
 * (a user id, a Slack user group, a Discord role) decides; a decision is taken once; a denial
 * or an expiry reaches the model; a restart between the question and the click still
 * finishes the turn.
 */
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, startApp } from "../../src/app.js";
import { parseInteractionId } from "../../src/runtime/interaction-ids.js";
import { TurnLedger } from "../../src/store/turns.js";
import { clickComponent } from "../emulators/discord/components.js";
import {
  DiscordEmulator,
  type StoredMessage,
  waitFor as waitForDiscord,
} from "../emulators/discord/index.js";
import type { StoredInteraction } from "../emulators/discord/types.js";
import { LlmEmulator } from "../emulators/llm/index.js";
import { type EmuMessage, SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { clickAction } from "../emulators/slack/interactive.js";
import { appEnv } from "../support/app-env.js";
import { scenario, slackQuestions, workspace, writeResults } from "../support/approvals.js";
import { lastUserText, toolResultsSinceUser } from "../support/llm-text.js";
import { killStarted, startSwitchboard, waitUntil } from "../support/process.js";
import { untilQuiet } from "../support/quiet.js";
import { actionsOf } from "../support/slack-actions.js";

describe("approvals in Slack", () => {
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let app: App;
  let dir: string;
  let root: string;

  beforeAll(async () => {
    ({ dir, root } = workspace("llm:\n  maxRetries: 0\nslack:\n  nativeStreaming: false\n"));
    llm = await LlmEmulator.start({ responder: scenario(root) });
    slack = await SlackEmulator.start();
    app = await startApp({ env: appEnv({ dir, llm, slack }), cwd: dir });
  }, 60_000);

  afterAll(async () => {
    await app?.stop();
    await slack?.stop();
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const { question, click } = slackQuestions(() => slack);

  it("asks before write_file; another member's click changes nothing; the asker's double click writes the file once", async () => {
    const m = slack.mention("C1", "U_ALICE", "please write note-1");
    const { message: q } = await question(m);
    expect(q.text).toContain("write_file");
    expect(q.text).toContain("filesystem");
    expect(q.text).toContain("contents of note-1");
    expect(slack.botReplies("C1", m.ts)[0]?.text).toBe("I will write note-1.");
    expect(existsSync(join(root, "note-1.txt"))).toBe(false);

    click(q, "U_BOB", "approve");
    await waitFor(() => slack.state.ephemerals.find((e) => e.user === "U_BOB"));
    expect(slack.state.ephemerals.filter((e) => e.user === "U_BOB").map((e) => e.text)).toEqual([
      "Only alice or an approver can decide on this, so nothing changed.",
    ]);
    await untilQuiet(slack.api.calls);
    expect(existsSync(join(root, "note-1.txt"))).toBe(false);
    expect(actionsOf(slack.state.find("C1", q.ts)!)).toHaveLength(3);

    // The same click delivered twice, then a second click of the asker.
    click(q, "U_ALICE", "approve", 2);
    await waitFor(() => slack.botReplies("C1", m.ts).some((r) => r.text.startsWith("Tool said:")));
    click(q, "U_ALICE", "approve");
    await waitFor(() => slack.state.ephemerals.find((e) => e.user === "U_ALICE"));
    await app.dispatcher.settled();
    await untilQuiet(slack.api.calls);

    expect(readFileSync(join(root, "note-1.txt"), "utf8")).toBe("contents of note-1");
    expect(writeResults(llm).filter((r) => lastUserText(r).includes("note-1"))).toHaveLength(1);
    const replies = slack.botReplies("C1", m.ts);
    expect(replies.filter((r) => r.text.startsWith("Tool said:"))).toHaveLength(1);
    const settled = slack.state.find("C1", q.ts)!;
    expect(actionsOf(settled)).toEqual([]);
    expect(settled.text).toMatch(/^✅ alice approved `write_file` from \*filesystem\*\./);
    expect(slack.state.ephemerals.filter((e) => e.user === "U_ALICE").map((e) => e.text)).toEqual([
      "alice already approved this; it runs once.",
    ]);
    expect(await new TurnLedger(app.store).pending()).toEqual([]);
  });

  it("never writes a denied file, and tells the model", async () => {
    const m = slack.mention("C1", "U_ALICE", "please write note-2");
    const { message: q } = await question(m);
    click(q, "U_ALICE", "deny");
    await waitFor(() => slack.botReplies("C1", m.ts).some((r) => r.text.startsWith("Tool said:")));
    await app.dispatcher.settled();
    expect(existsSync(join(root, "note-2.txt"))).toBe(false);
    const told = writeResults(llm).filter((r) => lastUserText(r).includes("note-2"));
    expect(told).toHaveLength(1);
    expect(toolResultsSinceUser(told[0]!).at(-1)).toBe(
      "Error: alice denied this call, so it was not run. Do not try it again unless they ask you to; say what you would have done instead.",
    );
    expect(slack.state.find("C1", q.ts)!.text).toMatch(
      /^🚫 alice denied `write_file` from \*filesystem\*: it was not run\./,
    );
  });

  it("asks no more in a thread where the asker approved the tool for the thread", async () => {
    const m = slack.mention("C1", "U_ALICE", "please write note-7");
    const { message: q } = await question(m);
    click(q, "U_ALICE", "approve_thread");
    await waitFor(() => slack.botReplies("C1", m.ts).some((r) => r.text.startsWith("Tool said:")));
    await app.dispatcher.settled();
    expect(slack.state.find("C1", q.ts)!.text).toMatch(
      /^✅ alice approved `write_file` from \*filesystem\* for the rest of this thread\./,
    );
    const before = slack.botReplies("C1", m.ts).length;
    slack.post("C1", "U_ALICE", "now write note-8", { threadTs: m.ts });
    await waitFor(() => existsSync(join(root, "note-8.txt")));
    await waitFor(
      // Without a question the answer is one message: the model's words, then what the tool said.
      () =>
        slack.botReplies("C1", m.ts).filter((r) => r.text.includes("Tool said: Successfully wrote"))
          .length === 2,
    );
    await app.dispatcher.settled();
    expect(
      slack
        .botReplies("C1", m.ts)
        .slice(before)
        .some((r) => actionsOf(r).length > 0),
    ).toBe(false);
    // Elsewhere it still asks.
    const other = slack.mention("C1", "U_ALICE", "please write note-11");
    await question(other);
    expect(existsSync(join(root, "note-11.txt"))).toBe(false);
  });

  it("runs the read-only echo without asking", async () => {
    const m = slack.mention("C1", "U_ALICE", "echo ping-7");
    await waitFor(() => slack.botReplies("C1", m.ts).some((r) => r.text.startsWith("Tool said:")));
    await app.dispatcher.settled();
    const replies = slack.botReplies("C1", m.ts);
    expect(replies.some((r) => actionsOf(r).length > 0)).toBe(false);
    expect(replies.at(-1)?.text).toContain("ping-7");
  });

  it("ends the question unanswered when the asker writes again, and answers the new message", async () => {
    const m = slack.mention("C1", "U_ALICE", "please write note-3");
    const { message: q } = await question(m);
    slack.post("C1", "U_ALICE", "never mind, just say hi", { threadTs: m.ts });
    await waitFor(() => slack.botReplies("C1", m.ts).some((r) => r.text.includes("never mind")));
    await app.dispatcher.settled();
    expect(slack.state.find("C1", q.ts)!.text).toMatch(/^⏭️ `write_file` from \*filesystem\* was not run/);
    click(q, "U_ALICE", "approve");
    await waitFor(() =>
      slack.state.ephemerals.find((e) => e.user === "U_ALICE" && e.text.includes("no longer")),
    );
    await app.dispatcher.settled();
    expect(existsSync(join(root, "note-3.txt"))).toBe(false);
  });
});

describe("approvals in Slack by a user group, and a question nobody answers", () => {
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let app: App;
  let dir: string;
  let root: string;

  beforeAll(async () => {
    ({ dir, root } = workspace(
      "llm:\n  maxRetries: 0\nslack:\n  nativeStreaming: false\napprovals:\n  expireAfterMs: 10000\n  approvers:\n    - { platform: slack, slackUserGroups: [S_OPS] }\n",
    ));
    llm = await LlmEmulator.start({ responder: scenario(root) });
    slack = await SlackEmulator.start();
    slack.state.userGroups.set("S_OPS", ["U_DANA", "U_CAROL"]);
    app = await startApp({ env: appEnv({ dir, llm, slack }), cwd: dir });
  }, 60_000);

  afterAll(async () => {
    await app?.stop();
    await slack?.stop();
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const { question, click } = slackQuestions(() => slack);
  const groupLookups = () => slack.api.calls.filter((c) => c.method === "usergroups.users.list");

  it("lets a member of an approvers' user group decide for the asker, and still refuses anyone else", async () => {
    const m = slack.mention("C1", "U_ALICE", "please write note-12");
    const { message: q } = await question(m);
    click(q, "U_BOB", "approve");
    await waitFor(() => slack.state.ephemerals.find((e) => e.user === "U_BOB"));
    expect(slack.state.ephemerals.filter((e) => e.user === "U_BOB").map((e) => e.text)).toEqual([
      "Only alice or an approver can decide on this, so nothing changed.",
    ]);
    expect(groupLookups().map((c) => c.params.usergroup)).toEqual(["S_OPS"]);
    expect(existsSync(join(root, "note-12.txt"))).toBe(false);
    expect(actionsOf(slack.state.find("C1", q.ts)!)).toHaveLength(3);

    click(q, "U_CAROL", "approve", 2);
    await waitFor(() => slack.botReplies("C1", m.ts).some((r) => r.text.startsWith("Tool said:")));
    await app.dispatcher.settled();
    await untilQuiet(slack.api.calls);
    expect(readFileSync(join(root, "note-12.txt"), "utf8")).toBe("contents of note-12");
    expect(writeResults(llm).filter((r) => lastUserText(r).includes("note-12"))).toHaveLength(1);
    // Carol's membership comes from bob's read of the group, kept for a minute.
    expect(groupLookups()).toHaveLength(1);
    const settled = slack.state.find("C1", q.ts)!;
    expect(actionsOf(settled)).toEqual([]);
    expect(settled.text).toMatch(/^✅ carol approved `write_file` from \*filesystem\*\./);
    expect(slack.state.ephemerals.filter((e) => e.user === "U_CAROL")).toEqual([]);
  });

  it("ends a question nobody answers at its expiry: not run, said on it, told to the model, answered", async () => {
    const m = slack.mention("C1", "U_ALICE", "please write note-13");
    const { message: q } = await question(m);
    expect(q.text).toContain("within 10 seconds; after that it is not run.");
    const reason =
      "Error: Nobody approved this call within 10 seconds, so it was not run. Tell the user it needs their approval.";
    // The answer below the question, whether the writer's pacing put it in one message or more.
    const answer = () =>
      slack
        .botReplies("C1", m.ts)
        .filter((r) => r.ts > q.ts)
        .map((r) => r.text)
        .join("");
    await waitFor(() => answer().includes(reason), { timeoutMs: 20_000 });
    await app.dispatcher.settled();
    await untilQuiet(slack.api.calls);
    expect(answer()).toBe(`Tool said: ${reason}`);
    const told = writeResults(llm).filter((r) => lastUserText(r).includes("note-13"));
    expect(told.map((r) => toolResultsSinceUser(r).at(-1))).toEqual([reason]);
    expect(existsSync(join(root, "note-13.txt"))).toBe(false);
    const settled = slack.state.find("C1", q.ts)!;
    expect(actionsOf(settled)).toEqual([]);
    expect(settled.text).toMatch(
      /^⌛ Nobody decided on `write_file` from \*filesystem\* within 10 seconds: it was not run\./,
    );
    expect(await new TurnLedger(app.store).pending()).toEqual([]);
  }, 30_000);
});

describe("approvals in Slack across a kill -9", () => {
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let dir: string;
  let root: string;

  beforeAll(async () => {
    ({ dir, root } = workspace("llm:\n  maxRetries: 0\nslack:\n  nativeStreaming: false\n"));
    llm = await LlmEmulator.start({ responder: scenario(root) });
    slack = await SlackEmulator.start();
  });

  afterAll(async () => {
    killStarted();
    await slack?.stop();
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("finishes the turn after a click that comes after the restart", async () => {
    const env = appEnv({ dir, llm, slack });
    const first = startSwitchboard("start", env);
    await waitUntil(() => first.stderr().includes("Switchboard is running"), "the bot to start");
    const m = slack.mention("C1", "U_ALICE", "please write note-9");
    let q: EmuMessage | undefined;
    await waitUntil(() => {
      q = slack.botReplies("C1", m.ts).find((r) => actionsOf(r).length > 0);
      return q !== undefined;
    }, "the question");
    first.child.kill("SIGKILL");
    await first.exited;

    const second = startSwitchboard("start", env);
    await waitUntil(() => second.stderr().includes("Switchboard is running"), "the bot to start again");
    const action = actionsOf(q!).find((a) => a.value === "approve")!;
    clickAction(slack, {
      user: "U_ALICE",
      channel: "C1",
      messageTs: q!.ts,
      actionId: action.action_id,
      value: "approve",
    });
    await waitUntil(
      () => slack.botReplies("C1", m.ts).some((r) => r.text.startsWith("Tool said:")),
      "the answer after the click",
      30_000,
    );
    expect(readFileSync(join(root, "note-9.txt"), "utf8")).toBe("contents of note-9");
    expect(slack.state.find("C1", q!.ts)!.text).toMatch(/^✅ alice approved/);
  }, 90_000);
});

describe("approvals in Discord", () => {
  let llm: LlmEmulator;
  let discord: DiscordEmulator;
  let app: App | undefined;
  let dir: string;
  let root: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    ({ dir, root } = workspace(
      'llm:\n  maxRetries: 0\ndiscord:\n  editIntervalMs: 250\napprovals:\n  approvers:\n    - { platform: discord, discordRoles: ["R_OPS"] }\n',
    ));
    llm = await LlmEmulator.start({ responder: scenario(root) });
    discord = await DiscordEmulator.start();
    discord.state.defineRole("R_OPS", "ops");
    env = appEnv({ dir, llm, discord });
    app = await startApp({ env, cwd: dir });
  }, 60_000);

  afterAll(async () => {
    await app?.stop();
    await discord?.stop();
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const s = () => discord.state;
  const threadOf = (m: StoredMessage) => m.id;
  const question = (m: StoredMessage) =>
    waitForDiscord(() =>
      discord
        .botMessages(threadOf(m))
        .find((x) => buttonsOf(x).some((b) => b.custom_id.endsWith(":approve"))),
    );
  const shown = new Map<string, DiscordButton[]>();
  const press = (q: StoredMessage, userId: string, value: string) => {
    if (!shown.has(q.id)) shown.set(q.id, buttonsOf(q));
    const button = shown.get(q.id)?.find((b) => parseInteractionId(b.custom_id)?.value === value);
    if (!button) throw new Error(`no ${value} button on the question`);
    return clickComponent(discord, { message: q, customId: button.custom_id, userId });
  };
  /** What the bot said to the clicker privately in answer to their click. */
  const toldAbout = (rec: StoredInteraction) =>
    waitForDiscord(() => {
      const ids = [...(rec.originalId ? [rec.originalId] : []), ...rec.followupIds];
      const texts = ids.map((id) => s().findMessage(id)?.content ?? "").filter(Boolean);
      return texts.length > 0 ? texts : undefined;
    });
  const answered = (m: StoredMessage) =>
    waitForDiscord(() => discord.botMessages(threadOf(m)).find((x) => x.content.startsWith("Tool said:")));

  it("asks before write_file; another member's click changes nothing; the asker's double click writes once", async () => {
    const m = discord.userMessage(s().general, "please write note-4", { mentionsBot: true });
    const q = await question(m);
    expect(q.content).toContain("write_file");
    expect(q.content).toContain("contents of note-4");
    expect(existsSync(join(root, "note-4.txt"))).toBe(false);

    const bob = press(q, s().bob.id, "approve");
    expect(await toldAbout(bob)).toEqual([
      "Only alice or an approver can decide on this, so nothing changed.",
    ]);
    await untilQuiet(discord.requests);
    expect(existsSync(join(root, "note-4.txt"))).toBe(false);
    expect(buttonsOf(s().findMessage(q.id)!).map((b) => parseInteractionId(b.custom_id)?.value)).toEqual([
      "approve",
      "approve_thread",
      "deny",
    ]);

    press(q, s().alice.id, "approve");
    press(q, s().alice.id, "approve");
    await answered(m);
    await app!.dispatcher.settled();
    await untilQuiet(discord.requests);
    expect(readFileSync(join(root, "note-4.txt"), "utf8")).toBe("contents of note-4");
    expect(writeResults(llm).filter((r) => lastUserText(r).includes("note-4"))).toHaveLength(1);
    expect(discord.botMessages(threadOf(m)).filter((x) => x.content.startsWith("Tool said:"))).toHaveLength(
      1,
    );
    const settled = s().findMessage(q.id)!;
    expect(buttonsOf(settled)).toEqual([]);
    expect(settled.content).toMatch(/^✅ alice approved `write_file` from \*\*filesystem\*\*\./);
  });

  it("never writes a denied file, and tells the model", async () => {
    const m = discord.userMessage(s().general, "please write note-5", { mentionsBot: true });
    const q = await question(m);
    press(q, s().alice.id, "deny");
    await answered(m);
    await app!.dispatcher.settled();
    expect(existsSync(join(root, "note-5.txt"))).toBe(false);
    const told = writeResults(llm).filter((r) => lastUserText(r).includes("note-5"));
    expect(told).toHaveLength(1);
    expect(toolResultsSinceUser(told[0]!).at(-1)).toMatch(/denied this call, so it was not run\./);
  });

  it("lets a member with an approver role decide for someone else", async () => {
    const m = discord.userMessage(s().general, "please write note-10", { mentionsBot: true });
    const q = await question(m);
    s().setRoles(s().bob.id, ["R_OPS"]);
    try {
      press(q, s().bob.id, "approve");
      await answered(m);
      expect(readFileSync(join(root, "note-10.txt"), "utf8")).toBe("contents of note-10");
      expect(s().findMessage(q.id)!.content).toMatch(/^✅ bob approved `write_file`/);
    } finally {
      s().setRoles(s().bob.id, []);
    }
  });

  it("runs the read-only echo without asking", async () => {
    const m = discord.userMessage(s().general, "echo pong-8", { mentionsBot: true });
    const a = await answered(m);
    expect(a.content).toContain("pong-8");
    expect(
      discord
        .botMessages(threadOf(m))
        .some((x) => buttonsOf(x).some((b) => b.custom_id.endsWith(":approve"))),
    ).toBe(false);
  });

  it("finishes the turn after a click that comes after a restart", async () => {
    const m = discord.userMessage(s().general, "please write note-6", { mentionsBot: true });
    const q = await question(m);
    await app!.stop();
    app = await startApp({ env, cwd: dir });
    press(q, s().alice.id, "approve");
    await answered(m);
    expect(readFileSync(join(root, "note-6.txt"), "utf8")).toBe("contents of note-6");
  }, 60_000);
});

type DiscordButton = { custom_id: string; label: string };

function buttonsOf(m: StoredMessage): DiscordButton[] {
  const rows = (m.components ?? []) as Array<{ components?: DiscordButton[] }>;
  return rows.flatMap((r) => r.components ?? []).filter((b) => typeof b.custom_id === "string");
}
