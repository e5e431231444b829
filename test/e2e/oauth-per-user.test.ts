/**
 * Per-user OAuth sign-ins, as two people on Slack live them: a real OAuth-protected MCP
 * server (the MCP SDK's server side) with `"oauth": {"perUser": true}`, the built bot as its
 * own process, and a browser played by following the redirects. Shown: before anyone has
 * signed in the model is offered the server's sign-in tool; a person whose turn needs the
 * server is asked in the thread, only they get the link (privately), and the turn goes on
 * once they signed in; each person's calls carry their own token; signing out revokes only
 * theirs; a sign-in nobody finishes ends in a sentence; no token in any output.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/mcp/testkit.js";
import { LlmEmulator } from "../emulators/llm/index.js";
import { type EmuMessage, SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { clickAction } from "../emulators/slack/interactive.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";
import { type OAuthMcpServer, startOAuthMcpServer } from "../support/oauth-mcp-server.js";
import { consent, linkIn, perUserModel } from "../support/per-user-scenario.js";
import { killStarted, type Running, startSwitchboard } from "../support/process.js";
import { actionsOf, switchboardSays } from "../support/slack-actions.js";

const KEY = "a test key for the token vault, long enough";

describe("per-user OAuth sign-ins to an MCP server", () => {
  let secure: OAuthMcpServer;
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let bot: Running;
  let healthPort: number;

  const slash = (text: string, user: string) => switchboardSays(slack, text, user);
  /** The answer once written whole: its text the same for longer than the edit interval. */
  const answerTo = async (m: EmuMessage): Promise<string> => {
    const reply = () => slack.botReplies("C1", m.ts).find((r) => /^(Done|Say)/.test(r.text))?.text;
    let last = await waitFor(reply, { timeoutMs: 30_000 });
    for (;;) {
      await new Promise((r) => setTimeout(r, 1_500));
      const now = reply();
      if (now === last) return now ?? "";
      last = now ?? "";
    }
  };
  /** The sign-in question in the thread, with its buttons. */
  const question = (m: EmuMessage) =>
    waitFor(() => slack.botReplies("C1", m.ts).find((r) => actionsOf(r).length > 0), { timeoutMs: 20_000 });
  const click = (q: EmuMessage, user: string, value: string) => {
    const action = actionsOf(q).find((a) => a.value === value);
    if (!action) throw new Error(`no ${value} button on ${q.text}`);
    clickAction(slack, {
      user,
      channel: "C1",
      messageTs: q.ts,
      actionId: action.action_id,
      value,
      blockId: action.block_id,
    });
  };
  /** Clicks Connect as `user` and returns what they were told privately. */
  const connect = async (q: EmuMessage, user: string): Promise<string> => {
    const before = slack.state.ephemerals.length;
    click(q, user, "reveal");
    return (
      await waitFor(() => slack.state.ephemerals.slice(before).find((e) => e.user === user), {
        timeoutMs: 15_000,
      })
    ).text;
  };
  /** A person's whole sign-in from the thread: the question, Connect, the browser. */
  const signInFrom = async (m: EmuMessage, user: string) => {
    const q = await question(m);
    const told = await connect(q, user);
    const url = linkIn(told);
    expect(url, told).toBeDefined();
    expect((await consent(url as string)).text).toContain("Signed in to mine");
    return q;
  };

  beforeAll(async () => {
    secure = await startOAuthMcpServer();
    llm = await LlmEmulator.start({ responder: perUserModel });
    slack = await SlackEmulator.start();
    healthPort = await freePort();
    const dir = scratchConfig(
      `llm:\n  maxRetries: 0\nhealth:\n  port: ${healthPort}\napprovals:\n  expireAfterMs: 10000\nslack:\n  nativeStreaming: false\n`,
    );
    writeFileSync(
      join(dir, "mcp.json"),
      JSON.stringify({ mcpServers: { mine: { url: secure.url, oauth: { perUser: true } } } }),
    );
    const env = { ...appEnv({ llm, slack, dir }), SWITCHBOARD_SECRET_KEY: KEY, LOG_LEVEL: "debug" };
    bot = startSwitchboard("start", env);
    await waitFor(
      async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined))?.ok,
      { timeoutMs: 30_000 },
    ).catch(() => {
      throw new Error(`the bot did not start:\n${bot.stderr().slice(-3_000)}`);
    });
  }, 60_000);

  afterAll(async () => {
    killStarted();
    await secure?.close();
    await slack?.stop();
    await llm?.close();
  });

  it("before anyone signs in, /tools says so and the model is offered the server's sign-in tool", async () => {
    expect(await slash("tools", "U_ALICE")).toMatch(
      /mine \(http\): each person signs in as themselves, tools known once someone signs in/,
    );
  }, 30_000);

  it("the first person is asked in the thread; only they get the link; the turn goes on once they signed in", async () => {
    const m = slack.mention("C1", "U_ALICE", "whoami");
    const q = await question(m);
    expect(q.text).toContain("press Connect");
    expect(q.text).not.toMatch(/http/);
    // Someone else's click is refused and shows them no link.
    const refused = await connect(q, "U_BOB");
    expect(refused).toMatch(/^Only .* can answer this/);
    expect(linkIn(refused)).toBeUndefined();
    const told = await connect(q, "U_ALICE");
    expect((await consent(linkIn(told) as string)).text).toContain("Signed in to mine");
    expect(await answerTo(m)).toMatch(/^Done: The person is signed in to mine\. Its tools \(whoami\)/);
    await waitFor(() => /is signed in to \*mine\*/.test(slack.state.find("C1", q.ts)?.text ?? ""), {
      timeoutMs: 10_000,
    });
    expect(await slash("tools", "U_ALICE")).toMatch(
      /mine \(http\): each person signs in as themselves, 1 tools; 1 signed-in connection open here/,
    );
  }, 60_000);

  it("each person's calls carry their own token: Alice's, then Bob's after his own sign-in", async () => {
    const a = await answerTo(slack.mention("C1", "U_ALICE", "whoami"));
    const alice = /token #(\d+)/.exec(a)?.[1];
    expect(alice, a).toBeDefined();
    const m = slack.mention("C1", "U_BOB", "whoami");
    await signInFrom(m, "U_BOB");
    const b = await answerTo(m);
    const bob = /token #(\d+)/.exec(b)?.[1];
    expect(bob, b).toBeDefined();
    expect(bob).not.toBe(alice);
    // Alice still gets hers.
    expect(await answerTo(slack.mention("C1", "U_ALICE", "whoami"))).toContain(`token #${alice}`);
  }, 90_000);

  it("three calls at once by someone not signed in ask them once, and all three carry their one token", async () => {
    const m = slack.mention("C1", "U_DAVE", "3 whoami");
    await signInFrom(m, "U_DAVE");
    const answer = await answerTo(m);
    const tokens = answer.replace(/^Done: /, "").split(" | ");
    expect(tokens, answer).toHaveLength(3);
    expect(new Set(tokens).size).toBe(1);
    expect(
      slack.botReplies("C1", m.ts).filter((r) => /press Connect|signed in to \*mine\*/.test(r.text)),
    ).toHaveLength(1);
  }, 60_000);

  it("signing out revokes only that person's tokens; their next turn asks them again", async () => {
    const revoked = secure.auth.revoked;
    expect(await slash("disconnect mine", "U_BOB")).toMatch(/^Signed you out of mine/);
    expect(secure.auth.revoked).toBeGreaterThan(revoked);
    expect(await slash("disconnect mine", "U_BOB")).toMatch(/^You were not signed in to mine/);
    expect(await answerTo(slack.mention("C1", "U_ALICE", "whoami"))).toMatch(
      /^Done: signed in as token #\d+$/,
    );
    const m = slack.mention("C1", "U_BOB", "whoami");
    const q = await question(m);
    click(q, "U_BOB", "cancel");
    expect(await answerTo(m)).toMatch(
      /^Done: Error: The person did not sign in to mine, so its tool did not run/,
    );
  }, 60_000);

  it("anyone may sign themselves in ahead with the connect command; their turns then ask nothing", async () => {
    const told = await slash("connect mine", "U_ERIN");
    expect(told).toMatch(/^Open this link to sign yourself, with your own account, in to mine/);
    expect((await consent(linkIn(told) as string)).text).toContain("Signed in to mine");
    const m = slack.mention("C1", "U_ERIN", "whoami");
    expect(await answerTo(m)).toMatch(/^Done: signed in as token #\d+$/);
    expect(slack.botReplies("C1", m.ts).some((r) => actionsOf(r).length > 0)).toBe(false);
  }, 60_000);

  it("a sign-in nobody finishes ends when the question expires, in a sentence", async () => {
    const m = slack.mention("C1", "U_CAROL", "whoami");
    const q = await question(m);
    expect(await answerTo(m)).toMatch(/^Done: Error: The person did not sign in to mine/);
    await waitFor(() => /did not sign in to \*mine\* within/.test(slack.state.find("C1", q.ts)?.text ?? ""), {
      timeoutMs: 10_000,
    });
  }, 30_000);

  it("no token or key appears in any output, at debug level", () => {
    const all = bot.stdout() + bot.stderr();
    expect(all.length).toBeGreaterThan(1_000);
    for (const token of secure.auth.issued) expect(all).not.toContain(token);
    expect(all).not.toContain(KEY);
    expect(bot.child.exitCode).toBeNull();
  });
});
