import type { Config } from "../config.js";
import type { Platform, ThreadKey } from "../core/thread.js";
import type { FeedbackBook } from "../store/feedback.js";
import { dayOf, sum, type UsageEntry, type UsageLedger, type UsageTotals } from "../store/usage.js";
import { dollarsText, tokensText, unpricedText } from "./budgets.js";

const DAY_MS = 86_400_000;
/** How far back a person's own report looks. */
const WEEK_DAYS = 7;
/** The admins' report names the biggest spenders, not everyone. */
const TOP = 10;

/**
 * "12 model calls, 34,210 tokens (30,000 in, 12,000 of them cached, 4,210 out), $0.1180";
 * "no model calls" when none.
 */
export function totalsText(t: UsageTotals): string {
  if (t.calls === 0) return "no model calls";
  const tokens = tokensText(t.inputTokens + t.outputTokens);
  const cached = t.cachedInputTokens ? `, ${t.cachedInputTokens.toLocaleString("en-US")} of them cached` : "";
  const split = `(${t.inputTokens.toLocaleString("en-US")} in${cached}, ${t.outputTokens.toLocaleString("en-US")} out)`;
  const cost = t.calls === t.unpriced ? "no price known" : dollarsText(t.cost);
  const unpriced = t.unpriced > 0 && t.unpriced < t.calls ? `, ${t.unpriced} without a price` : "";
  return `${t.calls} model call${t.calls === 1 ? "" : "s"}, ${tokens} ${split}, ${cost}${unpriced}${estimatedText(t)}`;
}

/** A stopped call's tokens are ours, counted from what it streamed: the report says which are. */
function estimatedText(t: UsageTotals): string {
  const n = t.estimated ?? 0;
  if (n === 0) return "";
  const calls = n === 1 ? "1 call" : `${n} calls`;
  return `, ${calls} estimated (stopped before the provider counted ${n === 1 ? "its" : "their"} tokens)`;
}

export interface Asker {
  platform: Platform;
  user: string;
  key: ThreadKey;
}

/** A person's own usage: today, this thread, the last seven days, and their daily budget. */
export async function ownUsage(
  ledger: UsageLedger,
  config: Config,
  who: Asker,
  now = Date.now(),
): Promise<string> {
  const days = Array.from({ length: WEEK_DAYS }, (_, i) => dayOf(now - i * DAY_MS));
  const scope = { user: who.user, platform: who.platform };
  const [perDay, thread] = await Promise.all([
    Promise.all(days.map((d) => ledger.entries(scope, d))),
    ledger.totals({ thread: who.key }),
  ]);
  const today = sum(perDay[0] ?? []);
  const lines = [
    `Your usage today (UTC): ${totalsText(today)}.`,
    `Last ${WEEK_DAYS} days: ${totalsText(sum(perDay.flat()))}.`,
  ];
  if (thread.calls > 0) lines.push(`This thread so far (everyone in it): ${totalsText(thread)}.`);
  const cap = config.usage.budgets.perUser;
  // The terminal is the operator's and has no cap (see Budgets).
  if (cap && who.platform !== "console") lines.push(`Your daily budget: ${budgetLeft(cap, today)}.`);
  return lines.join("\n");
}

/** Everyone's usage today, by person and by channel (admins). */
export async function everyonesUsage(
  ledger: UsageLedger,
  feedback?: FeedbackBook,
  now = Date.now(),
): Promise<string> {
  const [entries, votes] = await Promise.all([
    ledger.entries("all", dayOf(now)),
    feedback?.tally(dayOf(now)),
  ]);
  const rated =
    votes && votes.answers > 0
      ? [
          `Ratings today: ${votes.good} 👍, ${votes.bad} 👎 on ${votes.answers} answer${votes.answers === 1 ? "" : "s"}.`,
        ]
      : [];
  if (entries.length === 0) return ["Nobody has used the model today (UTC).", ...rated].join("\n");
  return [
    `Everyone today (UTC): ${totalsText(sum(entries))}.`,
    ...rated,
    "By person:",
    ...biggest(entries, (e) => `${e.platform} user ${e.user}`),
    "By channel:",
    ...biggest(entries, (e) => `${e.platform} channel ${e.channel || "(terminal)"}`),
  ].join("\n");
}

function biggest(entries: UsageEntry[], label: (e: UsageEntry) => string): string[] {
  const groups = new Map<string, UsageEntry[]>();
  for (const e of entries) {
    const name = label(e);
    groups.set(name, [...(groups.get(name) ?? []), e]);
  }
  const ranked = [...groups].map(([name, es]) => ({ name, totals: sum(es) }));
  ranked.sort((a, b) => tokensOf(b.totals) - tokensOf(a.totals));
  const shown = ranked.slice(0, TOP).map((r) => `• ${r.name}: ${totalsText(r.totals)}`);
  if (ranked.length > TOP) shown.push(`• and ${ranked.length - TOP} more`);
  return shown;
}

const tokensOf = (t: UsageTotals) => t.inputTokens + t.outputTokens;

function budgetLeft(cap: { tokens?: number; cost?: number }, used: UsageTotals): string {
  const parts: string[] = [];
  if (cap.tokens !== undefined)
    parts.push(`${tokensText(cap.tokens)}, ${tokensText(Math.max(0, cap.tokens - tokensOf(used)))} left`);
  if (cap.cost !== undefined) {
    const unpriced = unpricedText(used);
    const left = `${dollarsText(cap.cost)}, ${dollarsText(Math.max(0, cap.cost - used.cost))} left`;
    parts.push(unpriced ? `${left} (${unpriced})` : left);
  }
  return parts.join("; ");
}
