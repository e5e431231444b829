/**
 * A server's form (MCP elicitation) through the real app, discord.js against the Discord
 * emulator, and server-everything: Discord modals hold five inputs, so its thirteen fields
 * open in three parts from the same button; the first response to that button is the modal
 * itself; an answer the schema refuses is told and kept for the next try; only the asker
 * may answer; the values of all parts reach the tool together.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, startApp } from "../../src/app.js";
import { parseInteractionId } from "../../src/runtime/interaction-ids.js";
import { clickComponent, submitModal } from "../emulators/discord/components.js";
import { DiscordEmulator, type StoredMessage, waitFor } from "../emulators/discord/index.js";
import type { StoredInteraction } from "../emulators/discord/types.js";
import { LlmEmulator } from "../emulators/llm/index.js";
import { appEnv } from "../support/app-env.js";
import { formScenario, formsWorkspace } from "../support/forms-scenario.js";
import { untilQuiet } from "../support/quiet.js";

type DiscordButton = { custom_id?: string; url?: string; label: string; style: number };

function buttonsOf(m: StoredMessage): DiscordButton[] {
  const rows = (m.components ?? []) as Array<{ components?: DiscordButton[] }>;
  return rows.flatMap((r) => r.components ?? []);
}

describe("a server's form in Discord", () => {
  let llm: LlmEmulator;
  let discord: DiscordEmulator;
  let app: App;
  let dir: string;

  beforeAll(async () => {
    dir = formsWorkspace("llm:\n  maxRetries: 0\ndiscord:\n  editIntervalMs: 250\n", 10_000);
    llm = await LlmEmulator.start({ responder: formScenario });
    discord = await DiscordEmulator.start();
    app = await startApp({ env: appEnv({ dir, llm, discord }), cwd: dir });
  }, 60_000);

  afterAll(async () => {
    await app?.stop();
    await discord?.stop();
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const s = () => discord.state;
  const shown = new Map<string, DiscordButton[]>();
  const question = (m: StoredMessage) =>
    waitFor(() => {
      const q = discord
        .botMessages(m.id)
        .find((x) => buttonsOf(x).some((b) => /:(form|done)$/.test(b.custom_id ?? "")));
      if (q && !shown.has(q.id)) shown.set(q.id, buttonsOf(q));
      return q;
    });
  const press = (q: StoredMessage, userId: string, value: string) => {
    const button = shown
      .get(q.id)
      ?.find((b) => b.custom_id && parseInteractionId(b.custom_id)?.value === value);
    if (!button?.custom_id) throw new Error(`no ${value} button on the question`);
    return clickComponent(discord, { message: q, customId: button.custom_id, userId });
  };
  /** What the bot said to the person privately in answer to an interaction. */
  const toldAbout = (rec: StoredInteraction) =>
    waitFor(() => {
      const ids = [...(rec.originalId ? [rec.originalId] : []), ...rec.followupIds];
      const texts = ids.map((id) => s().findMessage(id)?.content ?? "").filter(Boolean);
      return texts.length > 0 ? texts : undefined;
    });
  const toolSaid = (m: StoredMessage, timeoutMs = 10_000) =>
    waitFor(() => discord.botMessages(m.id).find((x) => x.content.startsWith("Tool said:"))?.content, {
      timeoutMs,
    });

  it("opens thirteen fields in three modals of five; refuses a bad answer with its reason and keeps what was typed", async () => {
    const m = discord.userMessage(s().general, "form please", { mentionsBot: true });
    const q = await question(m);
    expect(q.content).toContain("asks alice to fill in a form");
    expect(q.content).toContain("the form opens in 3 parts: press Fill in once for each");

    const bob = press(q, s().bob.id, "form");
    expect(await toldAbout(bob)).toEqual([
      "Only alice can answer this, since it is their request; nothing changed.",
    ]);
    expect(bob.modal).toBeUndefined();

    const open1 = press(q, s().alice.id, "form");
    const modal1 = await waitFor(() => open1.modal);
    expect(open1.callbacks).toEqual([9]);
    expect(modal1.title).toBe("everything (1/3)");
    expect(modal1.fields.map((f) => f.label)).toEqual([
      "String",
      "Boolean",
      "String with default",
      "String with email format",
      "String with uri format",
    ]);
    expect(modal1.fields.map((f) => f.type)).toEqual([4, 23, 4, 4, 4]);

    const bad = submitModal(discord, {
      interaction: open1,
      values: { f0: "Ada Lovelace", f1: true, f3: "not-an-email" },
    });
    const told = await toldAbout(bad);
    expect(told.join("\n")).toContain(
      "String with email format: enter an email address, like name@example.com.",
    );
    expect(told.join("\n")).toContain("Press Fill in again to fix them; what you typed is kept.");

    const open2 = press(q, s().alice.id, "form");
    const again = await waitFor(() => open2.modal);
    expect(again.title).toBe("everything (1/3)");
    const kept = (id: string) => again.fields.find((f) => f.customId === id)?.component as { value?: string };
    expect(kept("f0").value).toBe("Ada Lovelace");
    expect(kept("f3").value).toBe("not-an-email");
    const part1 = submitModal(discord, { interaction: open2, values: { f3: "ada@example.com" } });
    expect(await toldAbout(part1)).toEqual(["Part 1 of 3 is saved. Press Fill in again for part 2."]);

    const open3 = press(q, s().alice.id, "form");
    const modal2 = await waitFor(() => open3.modal);
    expect(modal2.title).toBe("everything (2/3)");
    expect(modal2.fields.map((f) => f.type)).toEqual([4, 4, 4, 3, 3]);
    const part2 = submitModal(discord, { interaction: open3, values: { f6: "7", f9: ["Piano", "Drums"] } });
    expect(await toldAbout(part2)).toEqual(["Part 2 of 3 is saved. Press Fill in again for part 3."]);

    const open4 = press(q, s().alice.id, "form");
    expect((await waitFor(() => open4.modal)).title).toBe("everything (3/3)");
    submitModal(discord, { interaction: open4, values: {} });

    const said = await toolSaid(m);
    expect(said).toContain("✅ User provided the requested information!");
    expect(said).toContain("- Name: Ada Lovelace");
    expect(said).toContain("- Email: ada@example.com");
    expect(said).toContain("- Agreed to terms: true");
    expect(said).toContain("- Favorite Integer: 7");
    expect(said).toContain('"Piano"');
    await app.dispatcher.settled();
    await untilQuiet(discord.requests);
    const settled = s().findMessage(q.id)!;
    expect(buttonsOf(settled)).toEqual([]);
    expect(settled.content).toBe("✅ alice filled in **everything**'s form.");
  });

  it("cancels a form nobody answers in time, and says so on it", async () => {
    const m = discord.userMessage(s().general, "form please", { mentionsBot: true });
    const q = await question(m);
    expect(q.content).toContain("it waits 10 seconds, then it is cancelled");
    expect(await toolSaid(m, 20_000)).toContain("⚠️ User cancelled the elicitation dialog.");
    await app.dispatcher.settled();
    await untilQuiet(discord.requests);
    expect(s().findMessage(q.id)!.content).toBe(
      "⌛ Nobody answered **everything**'s form within 10 seconds, so it was cancelled.",
    );
    const late = press(q, s().alice.id, "form");
    expect(await toldAbout(late)).toEqual([
      "This form is no longer waiting for an answer: the tool call that asked for it has ended.",
    ]);
    expect(late.modal).toBeUndefined();
  }, 30_000);

  it("tells the server when the asker declines", async () => {
    const m = discord.userMessage(s().general, "form please", { mentionsBot: true });
    press(await question(m), s().alice.id, "decline");
    expect(await toolSaid(m)).toContain("❌ User declined to provide the requested information.");
  });

  it("shows a page to open as a link button and goes on when the asker says Done", async () => {
    const m = discord.userMessage(s().general, "link please", { mentionsBot: true });
    const q = await question(m);
    expect(q.content).toContain("open a page on **example.com**");
    const link = shown.get(q.id)?.find((b) => b.style === 5);
    expect(link).toMatchObject({ url: "https://example.com/flow", label: "Open example.com" });
    press(q, s().alice.id, "done");
    expect(await toolSaid(m)).toContain("✅ User completed the URL elicitation flow.");
  });
});
