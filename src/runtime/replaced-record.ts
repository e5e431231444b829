import type { ThreadKey } from "../core/thread.js";
import { storeFailed } from "../store/index.js";
import { cutOffBehind } from "../store/turn-record.js";
import type { TurnLedger, TurnRecord } from "../store/turns.js";

/**
 * What a thread's new turn knows of the record before it (see `Takeovers.settleBefore`):
 * the record as just read under the thread's lock, or `unsettled`, the thread's unfinished
 * turn could not be ended first (the record is read again).
 */
export type Known = { previous: TurnRecord | undefined } | { unsettled: true };

/**
 * The thread's record a new turn's replaces, and what of it must outlive it: the messages
 * handed over behind it go back to the handed ones (before it is overwritten, as it
 * carried them), and the replies cut off before it that still owe the restart note go to
 * the new record (`TurnRecord.cutOff`), whichever way it ends.
 */
export async function replacing(
  ledger: TurnLedger,
  key: ThreadKey,
  known: Known | undefined,
): Promise<{ previous: TurnRecord | undefined; cutOff: TurnRecord[] | undefined }> {
  const previous =
    known && "previous" in known
      ? known.previous
      : await ledger.get(key).catch((err: unknown) => {
          throw storeFailed(err);
        });
  if (previous?.queued?.length)
    await ledger.handQueued(previous).catch((err: unknown) => {
      throw storeFailed(err);
    });
  return { previous, cutOff: cutOffBehind(previous, known !== undefined && "unsettled" in known) };
}
