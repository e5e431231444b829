import { log } from "../log.js";
import type { TurnLedger, TurnRecord } from "../store/turns.js";
import type { Adapter } from "./contract.js";

/**
 * How many times a reply a crash cut off is tried with the restart note before its record
 * ends without it. A failure the platform does not say is final (an outage, or a refusal
 * the adapter does not know) would otherwise keep the turn pending, tried by every
 * replica's watcher every round and logged each time, for as long as any runs; this many
 * rounds outlast a short outage.
 */
export const RECOVER_ATTEMPTS = 10;

/** A turn that cannot be taken over ends with `note` in its reply, and its record with it. */
export async function endWithNote(
  record: TurnRecord,
  adapter: Adapter,
  deps: { ledger: TurnLedger; note: string },
): Promise<void> {
  const { ledger } = deps;
  if (!adapter.recover) return;
  try {
    await adapter.recover(record.key, record.address, deps.note);
  } catch (err) {
    const attempts = (record.recoverFailures ?? 0) + 1;
    if (attempts < RECOVER_ATTEMPTS) {
      // Counted in the record: every replica's watcher tries it, each one after the other.
      await ledger.recoverFailed(record).catch(() => undefined);
      throw err;
    }
    await ledger.end(record);
    log.warn(
      { err, key: record.key, attempts },
      "gave up ending a reply interrupted by a crash with the restart note; it stays as it was",
    );
    return;
  }
  await ledger.end(record);
  log.info({ key: record.key }, "ended a reply interrupted by a crash");
}
