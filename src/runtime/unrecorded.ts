import { setTimeout as sleep } from "node:timers/promises";
import { log } from "../log.js";
import type { SessionRepository } from "../store/sessions.js";
import type { TurnLedger, TurnRecord } from "../store/turns.js";

/** The longest pause between two tries to reach the store for a message whose record may be missing. */
const MAX_PAUSE_MS = 5_000;

/**
 * A turn that lost its thread's lock before its record was known to be stored (`open`
 * writes it while the model is asked). Nothing of it was shown, the dispatcher no longer
 * holds its message and the dedupe drops a redelivery: only the store can still get it
 * answered, exactly once. So, once the store answers: a record that was stored names this
 * process, and the takeover watch goes on with it (here, or elsewhere if this process is
 * gone); one that is not there (its write failed, or the lease's fence refused it) has its
 * question handed over (`TurnLedger.hand`), for any replica's watch to answer. Not when it
 * is answered already: the write landed after all and another process took the turn over
 * meanwhile, so the record is there, or gone with its question in the session.
 */
export async function answerUnrecorded(
  record: TurnRecord,
  ledger: TurnLedger,
  sessions: SessionRepository,
): Promise<void> {
  const { key, input, id } = record;
  if (!input || !id) return;
  // Settles once the store answers the write (or the client gives it up).
  if (
    await ledger.opened(record).then(
      () => true,
      () => false,
    )
  )
    return;
  for (let pause = 250; ; pause = Math.min(pause * 2, MAX_PAUSE_MS)) {
    try {
      if ((await ledger.get(key))?.id === id) return;
      const session = await sessions.get(key);
      if (session?.messages.some((m) => m.role === "user" && m.turn === id)) return;
      // Under the record's id: handed twice (a retry after a lost answer), it is handed once.
      await ledger.hand(key, input, id);
      log.info({ key }, "handed over a message whose turn stopped before its record was stored");
      return;
    } catch (err) {
      log.debug({ err, key }, "could not yet hand over a message whose record is missing; trying again");
      await sleep(pause, undefined, { ref: false });
    }
  }
}
