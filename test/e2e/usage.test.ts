/**
 * Usage, cost and budgets (issue: see and steer what it costs), on the real app against the
 * Discord and LLM emulators: what is recorded equals what the model server reported, the
 * cost is the price table's arithmetic, a daily budget stops a turn before any model call.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeThread } from "../../src/core/thread.js";
import { CHANGED, SAME, THANKS } from "../../src/runtime/feedback.js";
import { FeedbackBook } from "../../src/store/feedback.js";
import { UsageLedger } from "../../src/store/usage.js";
import { clickComponent } from "../emulators/discord/components.js";
import { DiscordEmulator, type StoredMessage, waitFor } from "../emulators/discord/index.js";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../emulators/llm/index.js";
import { type RunningApp, startWithEverything } from "../support/app-env.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";
import { DAY_WAIT_MS, inOneUtcDay } from "../support/one-utc-day.js";

/** gpt-4o-mini's list price (USD per million tokens), as the app's price table has it. */
const PRICE = { input: 0.15, output: 0.6, cachedInput: 0.075 };
const CAP = 4_000;

let llm: LlmEmulator;
let discord: DiscordEmulator;
let running: RunningApp | undefined;

/** Every response reports its own token counts, different each time; from the second on, part of the prompt was cached. */
function responder(req: RecordedRequest): ScriptedTurn {
  const n = llm.requests.length;
  const usage = { input: 1_000 + 7 * n, output: 200 + 3 * n, ...(n > 1 ? { cached: 256 * n } : {}) };
  if (isTitleRequest(req)) return { text: "Costs", usage };
  return { text: `You said: ${lastUserText(req).replace(/^\[[^\]]*\]\s*/, "")}`, usage };
}

beforeAll(async () => {
  llm = await LlmEmulator.start({ responder });
  discord = await DiscordEmulator.start();
  const admin = discord.state.bob.id;
  running = await startWithEverything(
    `llm:\n  maxRetries: 0\naccess:\n  admins: ["${admin}"]\nusage:\n  budgets:\n    perUser:\n      tokens: ${CAP}\n`,
    { llm, discord },
  );
}, 60_000);

afterAll(async () => {
  await running?.stop();
  await discord?.stop();
  await llm?.close();
});

const texts = (channelId: string) => discord.botMessages(channelId).map((m) => m.content);
const settled = () => running!.app.dispatcher.settled();

async function slash(name: string, options: Record<string, string>, channel: string, user: string) {
  const rec = discord.slash(name, options, channel, user);
  const original = () => (rec.originalId ? discord.state.findMessage(rec.originalId) : undefined);
  const msg = await waitFor(() => (original()?.content ? original() : undefined), { timeoutMs: 15_000 });
  return msg.content;
}

type Button = { custom_id: string; label: string };
const buttonsOf = (m: StoredMessage): Button[] =>
  ((m.components ?? []) as Array<{ components?: Button[] }>).flatMap((r) => r.components ?? []);

describe("usage, cost and budgets", () => {
  it(
    "records exactly what the model server reported, prices it, and stops the turn over budget",
    async () => {
      await inOneUtcDay();
      const s = discord.state;
      const m = discord.userMessage(s.general, "one", { mentionsBot: true });
      await waitFor(() => texts(m.id).includes("You said: one"), { timeoutMs: 20_000 });
      await settled();
      for (const word of ["two", "three"]) {
        discord.userMessage(m.id, word);
        await waitFor(() => texts(m.id).includes(`You said: ${word}`), { timeoutMs: 20_000 });
        await settled();
      }
      const reported = llm.requests.map((r) => r.reported!);
      // Three answers and the thread's title.
      expect(reported).toHaveLength(4);
      const input = reported.reduce((a, r) => a + r.input, 0);
      const output = reported.reduce((a, r) => a + r.output, 0);
      const cached = reported.reduce((a, r) => a + (r.cached ?? 0), 0);
      expect(cached).toBeGreaterThan(0);
      const cost = reported.reduce((a, r) => {
        const fresh = r.input - (r.cached ?? 0);
        return (
          a + (fresh * PRICE.input + (r.cached ?? 0) * PRICE.cachedInput + r.output * PRICE.output) / 1e6
        );
      }, 0);

      const ledger = new UsageLedger(running!.app.store);
      const mine = await ledger.totals({ user: s.alice.id, platform: "discord" });
      expect(mine).toMatchObject({
        calls: 4,
        inputTokens: input,
        outputTokens: output,
        cachedInputTokens: cached,
        unpriced: 0,
      });
      expect(mine.cost).toBeCloseTo(cost, 12);
      expect(
        await ledger.totals({
          thread: encodeThread({ platform: "discord", guild: s.guildId, channel: m.id }),
        }),
      ).toMatchObject({
        inputTokens: input,
      });
      expect(input + output).toBeGreaterThan(CAP);

      // Over the cap: a sentence that says which cap and when it resets, and no model request.
      const asked = llm.requests.length;
      discord.userMessage(m.id, "four");
      const refusal = await waitFor(() => texts(m.id).find((t) => t.includes("daily budget")), {
        timeoutMs: 20_000,
      });
      expect(refusal).toMatch(
        /^You have used your daily budget of 4,000 tokens \([\d,]+ tokens used\), so I will not ask the model for now\. It resets at 00:00 UTC, in /,
      );
      await settled();
      expect(llm.requests.length).toBe(asked);
      // Commands that ask the model are refused the same way; the others still answer.
      for (const name of ["compact", "title"])
        expect(await slash(name, {}, m.id, s.alice.id)).toMatch(
          /^You have used your daily budget of 4,000 tokens/,
        );
      expect(await slash("summary", {}, m.id, s.alice.id)).toMatch(/^There is no summary yet/);
      expect(llm.requests.length).toBe(asked);

      const metrics = await running!.app.metrics.render();
      const dollars = /^switchboard_llm_cost_dollars_total\{model="gpt-4o-mini"\} (\S+)$/m.exec(metrics);
      expect(Number(dollars?.[1])).toBeCloseTo(cost, 12);
      expect(metrics).toContain(
        `switchboard_llm_model_tokens_total{model="gpt-4o-mini",direction="in"} ${input}`,
      );
      expect(metrics).toContain(
        `switchboard_llm_model_tokens_total{model="gpt-4o-mini",direction="out"} ${output}`,
      );

      // Each person sees their own; everyone's is for admins.
      const own = await slash("usage", {}, m.id, s.alice.id);
      expect(own).toContain(
        `Your usage today (UTC): 4 model calls, ${(input + output).toLocaleString("en-US")} tokens (${input.toLocaleString("en-US")} in, ${cached.toLocaleString("en-US")} of them cached, ${output.toLocaleString("en-US")} out)`,
      );
      expect(own).toContain("Your daily budget: 4,000 tokens, 0 tokens left");
      expect(await slash("usage", { scope: "all" }, m.id, s.alice.id)).toMatch(
        /^Only admins can see everyone's usage/,
      );
      const all = await slash("usage", { scope: "all" }, m.id, s.bob.id);
      expect(all).toContain(`discord user ${s.alice.id}: 4 model calls`);
      expect(all).toContain("By channel:");
    },
    90_000 + DAY_WAIT_MS,
  );

  it(
    "puts 👍 / 👎 under a finished answer: one vote per person, a second click changes it, bots' clicks are ignored",
    async () => {
      await inOneUtcDay();
      const s = discord.state;
      const m = discord.userMessage(s.general, "rate me", { mentionsBot: true, author: s.bob });
      const answer = await waitFor(
        () =>
          discord
            .botMessages(m.id)
            .find((x) => x.content === "You said: rate me" && buttonsOf(x).length === 2),
        { timeoutMs: 20_000 },
      );
      expect(buttonsOf(answer).map((b) => b.label)).toEqual(["👍", "👎"]);
      const [good, bad] = buttonsOf(answer);
      const click = async (button: Button, userId: string) => {
        const rec = clickComponent(discord, { message: answer, customId: button.custom_id, userId });
        // The click is acknowledged without a change to the answer; the sentence is a private follow-up.
        return waitFor(() => discord.state.findMessage(rec.followupIds[0] ?? "")?.content, {
          timeoutMs: 10_000,
        });
      };
      expect(await click(good!, s.alice.id)).toBe(THANKS);
      expect(await click(bad!, s.alice.id)).toBe(CHANGED);
      expect(await click(bad!, s.alice.id)).toBe(SAME);
      expect(await click(good!, s.bob.id)).toBe(THANKS);
      // Another bot's click is not a vote (and gets no sentence).
      const fromBot = clickComponent(discord, {
        message: answer,
        customId: good!.custom_id,
        userId: s.otherBot.id,
      });
      await settled();
      await new Promise((r) => setTimeout(r, 300));
      expect(fromBot.followupIds).toEqual([]);

      const book = new FeedbackBook(running!.app.store);
      expect(await book.tally()).toEqual({ good: 1, bad: 1, answers: 1 });
      const metrics = await running!.app.metrics.render();
      expect(metrics).toContain('switchboard_feedback_votes_total{platform="discord",vote="good"} 2');
      expect(metrics).toContain('switchboard_feedback_changes_total{platform="discord",to="bad"} 1');
      expect(await slash("usage", { scope: "all" }, m.id, s.bob.id)).toContain(
        "Ratings today: 1 👍, 1 👎 on 1 answer.",
      );
    },
    60_000 + DAY_WAIT_MS,
  );
});
