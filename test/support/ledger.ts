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
