import { openStore } from "../../src/store/index.js";
import { TurnLedger, type TurnRecord } from "../../src/store/turns.js";

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
