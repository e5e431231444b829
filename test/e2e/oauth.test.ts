/**
 * OAuth sign-in to an MCP server, as an operator and a team live it: a real
 * OAuth-protected MCP server (the MCP SDK's server side of the spec) on 127.0.0.1, the
 * built bot as its own process on Slack (the emulator), `switchboard mcp login` in a
 * terminal, and a browser played by following the redirects. Shown: the shared sign-in;
 * ten tool calls at once on a token about to expire make one refresh request; disconnect
 * revokes; a refresh token the server revoked, metadata that is not metadata, and a
 * callback with a wrong state each end in a sentence; no token in any output, at debug level.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/mcp/testkit.js";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../emulators/llm/index.js";
import { SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";
import { isTitleRequest, lastUserText, toolResultsSinceUser } from "../support/llm-text.js";
import {
  type OAuthMcpServer,
  startBrokenAuthServer,
  startOAuthMcpServer,
} from "../support/oauth-mcp-server.js";
import { killStarted, type Running, startSwitchboard } from "../support/process.js";
import { switchboardSays } from "../support/slack-actions.js";

const KEY = "a test key for the token vault, long enough";
const ADMIN = "U_ADMIN";

function model(req: RecordedRequest): ScriptedTurn {
  if (isTitleRequest(req)) return { text: "Sign-in" };
  const results = toolResultsSinceUser(req);
  if (results.length > 0) return { text: `Done: ${results.join(" | ")}` };
  const n = /(\d+) whoami/.exec(lastUserText(req))?.[1];
  if (!n) return { text: "Say how many whoami." };
  return {
    toolCalls: Array.from({ length: Number(n) }, (_, i) => ({
      id: `c${i}`,
      name: "secure__whoami",
      // Distinct arguments: the same call three times in a turn is refused as a loop.
      arguments: { call: i },
    })),
  };
}

/** A browser that is signed in at the authorization server: follows the redirects to the callback. */
async function consent(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { redirect: "follow" });
  return { status: res.status, text: await res.text() };
}

async function untilOutput(proc: Running, pattern: RegExp, ms = 20_000): Promise<RegExpExecArray> {
  let found: RegExpExecArray | null = null;
  await waitFor(
    () => {
      found = pattern.exec(proc.stdout());
      return found !== null;
    },
    { timeoutMs: ms },
  ).catch(() => {
    throw new Error(`no ${pattern} in the output:\n${proc.stdout()}\n${proc.stderr()}`);
  });
  return found as unknown as RegExpExecArray;
}

describe("OAuth sign-in to an MCP server", () => {
  let secure: OAuthMcpServer;
  let broken: { url: string; close(): Promise<void> };
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let healthPort: number;
  let bot: Running | undefined;
  const outputs: Running[] = [];

  const slash = (text: string, user = ADMIN) => switchboardSays(slack, text, user);
  const ask = async (text: string, channel = "C1"): Promise<string> => {
    const m = slack.mention(channel, "U_BOB", text);
    const reply = await waitFor(
      () => slack.botReplies(channel, m.ts).find((r) => /^(Done|Say)/.test(r.text)),
      {
        timeoutMs: 30_000,
      },
    );
    return reply.text;
  };
  const login = async (): Promise<Running> => {
    const proc = startSwitchboard(["mcp", "login", "secure"], { ...env, LOG_LEVEL: "debug" });
    outputs.push(proc);
    const [, url] = await untilOutput(proc, /^\s+(http\S+)$/m);
    expect((await consent(url as string)).status).toBe(200);
    expect(await proc.exited).toBe(0);
    expect(proc.stdout()).toContain("Signed in to secure.");
    return proc;
  };

  beforeAll(async () => {
    secure = await startOAuthMcpServer();
    broken = await startBrokenAuthServer();
    llm = await LlmEmulator.start({ responder: model });
    slack = await SlackEmulator.start();
    healthPort = await freePort();
    dir = scratchConfig(
      `llm:\n  maxRetries: 0\nhealth:\n  port: ${healthPort}\naccess:\n  admins: ["${ADMIN}"]\nslack:\n  nativeStreaming: false\n`,
    );
    writeFileSync(
      join(dir, "mcp.json"),
      JSON.stringify({
        mcpServers: { secure: { url: secure.url, oauth: true }, broken: { url: broken.url, oauth: true } },
      }),
    );
    env = { ...appEnv({ llm, slack, dir }), SWITCHBOARD_SECRET_KEY: KEY };
  }, 30_000);

  afterAll(async () => {
    killStarted();
    await secure?.close();
    await broken?.close();
    await slack?.stop();
    await llm?.close();
  });

  it("refuses to start without a key to encrypt the tokens, saying which variable to set", async () => {
    const proc = startSwitchboard("start", { ...env, SWITCHBOARD_SECRET_KEY: "" });
    expect(await proc.exited).toBe(2);
    expect(proc.stderr()).toContain("secure, broken sign in with OAuth");
    expect(proc.stderr()).toContain("set SWITCHBOARD_SECRET_KEY");
  });

  it("signs in once for everyone from a terminal, and the bot's calls carry the token", async () => {
    // The bot is not running: the login command serves the callback itself.
    await login();
    bot = startSwitchboard("start", { ...env, LOG_LEVEL: "debug" });
    outputs.push(bot);
    await waitFor(
      async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined))?.ok,
      {
        timeoutMs: 30_000,
      },
    );
    expect(await slash("tools")).toMatch(/secure \(http\): connected, 1 tools/);
    expect(await ask("1 whoami")).toMatch(/^Done: signed in as token #0$/);
  }, 60_000);

  it("a callback with a wrong state, or none, is refused with a sentence and changes nothing", async () => {
    const res = await fetch(`http://127.0.0.1:${healthPort}/oauth/callback?state=forged&code=stolen`);
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("This sign-in link is unknown, already used or expired");
    expect(await ask("1 whoami", "C1")).toMatch(/^Done: signed in as token #0$/);
  }, 30_000);

  it("ten calls at once on a token about to expire make one refresh request", async () => {
    // Sign in again with tokens that live 70 s: the bot refreshes them 60 s ahead, so from 10 s on.
    secure.auth.expiresIn = 70;
    const chat = await slash("connect secure");
    // Slack's mrkdwn escapes the link's ampersands and may wrap it in angle brackets.
    const url = /(http[^\s>|]+)/.exec(chat)?.[1]?.replace(/&amp;/g, "&");
    expect(url).toBeDefined();
    // The running bot serves the callback and connects the server again.
    expect((await consent(url as string)).text).toContain("Signed in to secure");
    const signedAt = Date.now();
    await waitFor(async () => /secure \(http\): connected/.test(await slash("tools")), { timeoutMs: 15_000 });
    secure.auth.expiresIn = 3600;
    await new Promise((r) => setTimeout(r, Math.max(0, signedAt + 11_000 - Date.now())));
    const before = secure.auth.refreshRequests;
    const answer = await ask("10 whoami", "C1");
    expect(secure.auth.refreshRequests - before).toBe(1);
    const used = new Set(answer.replace(/^Done: /, "").split(" | "));
    expect(answer.split(" | ")).toHaveLength(10);
    // All ten carried the one refreshed token.
    expect(used.size).toBe(1);
  }, 60_000);

  it("disconnect revokes the tokens at the server; the server then waits for a sign-in", async () => {
    const revokedBefore = secure.auth.revoked;
    expect(await slash("disconnect secure")).toContain("Signed out of secure");
    expect(secure.auth.revoked).toBeGreaterThan(revokedBefore);
    expect(await slash("tools")).toMatch(/secure \(http\): failed \(needs a sign-in/);
    expect(await slash("disconnect secure", "U_BOB")).toMatch(/^Only admins can sign the bot out/);
  }, 30_000);

  it("a refresh token the server revoked ends in a sentence asking for a sign-in, with no crash", async () => {
    secure.auth.expiresIn = 3600;
    await login();
    await waitFor(async () => /secure \(http\): connected/.test(await slash("tools")), { timeoutMs: 15_000 });
    secure.auth.revokeAll();
    const answer = await ask("1 whoami", "C1");
    expect(answer).toContain("needs a new sign-in");
    await waitFor(async () => /secure \(http\): failed \(needs a sign-in/.test(await slash("tools")), {
      timeoutMs: 15_000,
    });
    expect(bot?.child.exitCode).toBeNull();
  }, 60_000);

  it("metadata that is not metadata ends the sign-in in a sentence", async () => {
    expect(await slash("connect broken")).toMatch(/^The sign-in to broken could not start: /);
  }, 30_000);

  it("no token, refresh token or key appears in any output, at debug level", () => {
    const all = outputs.map((p) => p.stdout() + p.stderr()).join("\n");
    expect(all.length).toBeGreaterThan(1_000);
    for (const token of secure.auth.issued) expect(all).not.toContain(token);
    expect(all).not.toContain(KEY);
  });
});
