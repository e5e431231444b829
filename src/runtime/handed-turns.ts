import { randomUUID } from "node:crypto";
import type { ThreadKey } from "../core/thread.js";
import type { Lease } from "../store/state.js";
import type { TurnLedger, TurnRecord } from "../store/turns.js";
import type { WaitingMessages } from "../store/waiting-messages.js";

/*
 * A message is in one of three places in the store while it is owed an answer: kept while
 * it waits, handed over, or in its turn's record. It moves by being written to the next
 * place first and taken from the last one after, the record naming what it took
 * (`TurnRecord.took`): a crash between the two leaves it in both, never in neither.
 */

/**
 * The thread's handed messages, oldest first, in a record for the first that carries the
 * rest (`queued`), under the thread's lock (`lease`); undefined when there are none.
 */
export async function recordHanded(
  ledger: TurnLedger,
  key: ThreadKey,
  owner: string,
  lease: Lease | undefined,
): Promise<TurnRecord | undefined> {
  const { messages, members } = await ledger.handedIn(key);
  const [next, ...rest] = messages;
  if (!next) return undefined;
  let record: TurnRecord;
  try {
    const run = { id: randomUUID(), owner, input: next, ...(rest.length ? { queued: rest } : {}) };
    record = await ledger.begin(key, { ...run, took: { handed: members } }, lease);
  } catch (err) {
    // Still handed (they go only once a record carries them): listed again, for the next round.
    await ledger.relistHanded(key).catch(() => undefined);
    throw err;
  }
  await ledger.dropHanded(key, members);
  // Taken already: a takeover of this record has nothing to take (so written at its next write).
  delete record.took;
  return record;
}

/**
 * The record's process died after writing it and before it took the other copies of the
 * record's messages away: taken now, before the turn goes on, or they would be answered
 * again once it ends.
 */
export async function dropTaken(
  record: TurnRecord,
  ledger: TurnLedger,
  waiting: WaitingMessages | undefined,
): Promise<void> {
  const { handed, waiting: kept } = record.took ?? {};
  if (handed?.length) await ledger.dropHanded(record.key, handed);
  if (kept) await waiting?.forget({ key: record.key, ...kept });
  delete record.took;
}
