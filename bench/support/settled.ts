import type { App } from "../../src/app.js";
import type { ThreadKey } from "../../src/core/thread.js";
import { TurnLedger } from "../../src/store/turns.js";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Resolves (with the time) once the app is done with the thread's turn: the thread's
 * session is stored, so the adapters know the thread (a follow-up without a mention is
 * answered), and no turn record is open, so a follow-up does not queue behind the turn.
 * Asks the app's own store, as a second replica would.
 */
export async function turnOver(app: App, key: ThreadKey, timeoutMs = 30_000): Promise<number> {
  const ledger = new TurnLedger(app.store);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if ((await app.sessions.exists(key)) && !(await ledger.get(key))) return Date.now();
    if (Date.now() > deadline) throw new Error(`the turn in ${key} did not end within ${timeoutMs} ms`);
    await sleep(5);
  }
}
