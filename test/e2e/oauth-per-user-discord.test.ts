/**
 * Per-user OAuth sign-ins on Discord: the real app (discord.js against the Discord
 * emulator) and a real OAuth-protected MCP server (the MCP SDK's server side) with
 * `"oauth": {"perUser": true}`. Shown: the question in the thread carries Connect and
 * Cancel; someone else's Connect is refused with no link; the asker's Connect answers them
 * alone (an ephemeral reply) with the link; the turn goes on once they signed in; each
 * person's calls carry their own token.
 */
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, startApp } from "../../src/app.js";
import { freePort } from "../../src/mcp/testkit.js";
import { parseInteractionId } from "../../src/runtime/interaction-ids.js";
import { clickComponent } from "../emulators/discord/components.js";
import { DiscordEmulator, type StoredMessage, waitFor } from "../emulators/discord/index.js";
import type { StoredInteraction } from "../emulators/discord/types.js";
import { LlmEmulator } from "../emulators/llm/index.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";
import { type OAuthMcpServer, startOAuthMcpServer } from "../support/oauth-mcp-server.js";
import { consent, linkIn, perUserModel } from "../support/per-user-scenario.js";

type Button = { custom_id?: string; label: string };
const buttonsOf = (m: StoredMessage): Button[] =>
  ((m.components ?? []) as Array<{ components?: Button[] }>).flatMap((r) => r.components ?? []);

describe("per-user OAuth sign-ins in Discord", () => {
  let secure: OAuthMcpServer;
  let llm: LlmEmulator;
  let discord: DiscordEmulator;
  let app: App;
  let dir: string;

  beforeAll(async () => {
    secure = await startOAuthMcpServer();
    llm = await LlmEmulator.start({ responder: perUserModel });
    discord = await DiscordEmulator.start();
    dir = scratchConfig(
      `llm:\n  maxRetries: 0\nhealth:\n  port: ${await freePort()}\napprovals:\n  expireAfterMs: 10000\n`,
    );
    writeFileSync(
      join(dir, "mcp.json"),
      JSON.stringify({ mcpServers: { mine: { url: secure.url, oauth: { perUser: true } } } }),
    );
    const env = {
      ...appEnv({ llm, discord, dir }),
      SWITCHBOARD_SECRET_KEY: "a Discord test key for the vault",
    };
    app = await startApp({ env, cwd: dir });
  }, 60_000);

  afterAll(async () => {
    await app?.stop();
    await secure?.close();
    await discord?.stop();
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const s = () => discord.state;
  /** The thread's answers written whole (the question and its settled text are not answers). */
  const answers = (thread: string) =>
    discord
      .botMessages(thread)
      .map((m) => m.content)
      .filter((t) => t.startsWith("Done:"));
  const question = (thread: string) =>
    waitFor(
      () =>
        discord
          .botMessages(thread)
          .find((m) => buttonsOf(m).some((b) => parseInteractionId(b.custom_id ?? "")?.value === "reveal")),
      { timeoutMs: 20_000 },
    );
  const press = (q: StoredMessage, userId: string, value: string) => {
    const button = buttonsOf(q).find((b) => b.custom_id && parseInteractionId(b.custom_id)?.value === value);
    if (!button?.custom_id) throw new Error(`no ${value} button on ${q.content}`);
    return clickComponent(discord, { message: q, customId: button.custom_id, userId });
  };
  /** What the person who clicked was told, privately. */
  const told = async (rec: StoredInteraction) => {
    const texts = await waitFor(
      () => {
        const ids = [...(rec.originalId ? [rec.originalId] : []), ...rec.followupIds];
        const found = ids.map((id) => s().findMessage(id)).filter((m) => m?.content);
        return found.length > 0 ? found : undefined;
      },
      { timeoutMs: 15_000 },
    );
    return texts.map((m) => ({ text: m!.content, ephemeral: ((m!.flags ?? 0) & 64) !== 0 }));
  };

  it("asks the asker in the thread; someone else's Connect shows no link; the asker's shows it to them alone", async () => {
    const m = discord.userMessage(s().general, "whoami", { mentionsBot: true });
    const q = await question(m.id);
    expect(q.content).toContain("press Connect");
    expect(q.content).not.toMatch(/http/);
    expect(buttonsOf(q).map((b) => b.label)).toEqual(["Connect mine", "Cancel"]);

    const [refused] = await told(press(q, s().bob.id, "reveal"));
    expect(refused?.text).toMatch(/^Only .* can answer this/);
    expect(linkIn(refused?.text ?? "")).toBeUndefined();

    const [link] = await told(press(q, s().alice.id, "reveal"));
    expect(link?.ephemeral).toBe(true);
    expect((await consent(linkIn(link?.text ?? "") as string)).text).toContain("Signed in to mine");
    const [answer] = await waitFor(() => (answers(m.id).length > 0 ? answers(m.id) : undefined), {
      timeoutMs: 20_000,
    });
    expect(answer).toMatch(/^Done: The person is signed in to mine\. Its tools \(whoami\)/);
    await waitFor(
      () => /^✅ alice is signed in to \*\*mine\*\*\.$/.test(s().findMessage(q.id)?.content ?? ""),
      {
        timeoutMs: 10_000,
      },
    );
    // Nothing in the thread holds the link: only the asker saw it.
    expect(
      discord
        .botMessages(m.id)
        .filter((x) => !((x.flags ?? 0) & 64))
        .some((x) => /http/.test(x.content)),
    ).toBe(false);
  }, 60_000);

  it("each person's calls carry their own token", async () => {
    const a = discord.userMessage(s().general, "whoami", { mentionsBot: true });
    const alice = /token #(\d+)/.exec(
      (await waitFor(() => answers(a.id)[0], { timeoutMs: 20_000 })) ?? "",
    )?.[1];
    expect(alice).toBeDefined();
    const b = discord.userMessage(s().general, "whoami", { mentionsBot: true, author: s().bob });
    const q = await question(b.id);
    const [link] = await told(press(q, s().bob.id, "reveal"));
    expect((await consent(linkIn(link?.text ?? "") as string)).text).toContain("Signed in to mine");
    await waitFor(() => answers(b.id)[0], { timeoutMs: 20_000 });
    // The sign-in's own answer, then Bob asks again with his token.
    discord.userMessage(b.id, "whoami", { author: s().bob });
    const bob = await waitFor(
      () =>
        answers(b.id)
          .map((t) => /token #(\d+)/.exec(t)?.[1])
          .find((x) => x !== undefined),
      { timeoutMs: 20_000 },
    );
    expect(bob).not.toBe(alice);
  }, 90_000);
});
