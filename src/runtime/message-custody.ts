import { log } from "../log.js";
import type { Dedupe } from "../store/dedupe.js";
import { LockLost, type ThreadLock } from "../store/locks.js";
import type { TurnLedger, TurnRecord } from "../store/turns.js";
import type { Inbound } from "./contract.js";

/**
 * A turn's message was taken over by another process while this one stalled past its
 * heartbeat (see `Dedupe.hold`): that one answers it, and this turn writes nothing.
 */
export class ClaimLost extends LockLost {
  constructor(key: string) {
    super(key);
    this.message = `The message of ${key} was taken over by another process while this one stalled.`;
    this.name = "ClaimLost";
  }
}

/** The record of a turn whose message another process took over: it is that one's to answer. */
export async function endTaken(
  ledger: Pick<TurnLedger, "end">,
  record: TurnRecord,
  key: string,
): Promise<void> {
  log.warn({ key }, "another process took this message over while this one stalled; it answers it");
  await ledger.end(record).catch((err: unknown) => log.warn({ err, key }, "could not end the turn's record"));
}

/**
 * `recorded`, failing with `ClaimLost` when `ours` says the message is another process's:
 * awaited before the turn shows anything, which may be after it failed (so it is never
 * an unhandled rejection meanwhile).
 */
export function whileOurs(recorded: Promise<void>, ours: Promise<boolean>, key: string): Promise<void> {
  const both = Promise.all([recorded, ours]).then(([, still]) => {
    if (!still) throw new ClaimLost(key);
  });
  both.catch(() => undefined);
  return both;
}

/**
 * Who answers for a message between its delivery and its answer. Slack keeps delivering
 * a message until it is acknowledged, and the acknowledgement waits until the message is
 * stored (`Inbound.onStored`): kept while it waits, or in its turn's record. Just before
 * that write its dedupe claim is marked held, so a redelivery leaves it to whoever answers
 * from the store, and takes over only a message whose process died before storing it.
 */
export class MessageCustody {
  /** Whether each message's claims were still this process's as they were marked held. */
  private readonly held = new WeakMap<Inbound, Promise<boolean>>();
  private readonly told = new WeakSet<Inbound>();

  constructor(private readonly deps: { dedupe: Dedupe; lock: Pick<ThreadLock, "alive"> }) {}

  /** A redelivery's sighting (see `Dedupe.redelivered`). */
  redelivered(id: string, waits = true): Promise<boolean> {
    return this.deps.dedupe.redelivered(id, (owner) => this.deps.lock.alive(owner), waits);
  }

  /**
   * The message is about to be written to the store. Asked before that write, on the same
   * connection: a crash between the two loses the message, rather than answering it twice.
   * Resolves false when another process has taken the message over (see `Dedupe.hold`).
   */
  storing(inbound: Inbound): Promise<boolean> {
    let ours = this.held.get(inbound);
    if (ours) return ours;
    ours = Promise.all(
      [inbound.id, ...(inbound.claims ?? [])].map((id) =>
        this.deps.dedupe.hold(id).catch((err: unknown) => {
          // Unknown, not lost: the record's own write fails too if the store is away.
          log.debug({ err, key: inbound.key }, "a message's claim was not marked held");
          return true;
        }),
      ),
    ).then((held) => held.every(Boolean));
    this.held.set(inbound, ours);
    return ours;
  }

  /** A turn's hooks for its message's record: held as it is written, stored, then `copy`'s own (see `WaitingKeeper.starting`). */
  hooks(
    inbound: Inbound,
    copy: { recorded: () => void },
  ): { recording(): Promise<boolean>; recorded(): void } {
    return {
      recording: () => this.storing(inbound),
      recorded: () => {
        this.stored(inbound);
        copy.recorded();
      },
    };
  }

  /** The message is in the store: its platform may stop delivering it. */
  stored(inbound: Inbound): void {
    if (this.told.has(inbound)) return;
    this.told.add(inbound);
    inbound.onStored?.();
  }
}
