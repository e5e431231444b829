import { openStore } from "../../src/store/index.js";
import type { TurnInput } from "../../src/store/turns.js";
import { TurnLedger, type TurnRecord } from "../../src/store/turns.js";
import { type Kept, WaitingMessages } from "../../src/store/waiting-messages.js";

/** The unfinished turns in a bot's store, read from outside the bot's process. */
export async function ledgerOf(env: NodeJS.ProcessEnv): Promise<TurnRecord[]> {
  const url = env.STORE_URL;
  if (!url) throw new Error("The environment names no STORE_URL");
  const store = await openStore(url);
  try {
    return await new TurnLedger(store).pending();
  } finally {
    await store.close();
  }
}

/**
 * The unfinished turns left once a bot has had `ms` to end the ones it just answered:
 * the final text is on the platform a moment before the record of its turn is ended,
 * longer on a loaded machine. Empty as soon as the ledger is.
 */
export async function ledgerAfter(env: NodeJS.ProcessEnv, ms = 10_000): Promise<TurnRecord[]> {
  for (const until = Date.now() + ms; ; await new Promise((r) => setTimeout(r, 100))) {
    const left = await ledgerOf(env);
    if (left.length === 0 || Date.now() > until) return left;
  }
}

/** The messages a bot kept in its store while they waited for their thread (see WaitingMessages). */
export async function waitingIn(env: NodeJS.ProcessEnv): Promise<Array<{ kept: Kept; input: TurnInput }>> {
  const url = env.STORE_URL;
  if (!url) throw new Error("The environment names no STORE_URL");
  const store = await openStore(url);
  try {
    const waiting = new WaitingMessages(store, new TurnLedger(store));
    const alive = async () => false;
    const all = await Promise.all((await waiting.threads()).map((key) => waiting.orphans(key, alive)));
    return all.flat();
  } finally {
    await store.close();
  }
}
