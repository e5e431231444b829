import { log } from "../log.js";
import type { Claims } from "../store/claims.js";
import type { Dedupe } from "../store/dedupe.js";
import type { ThreadLock } from "../store/locks.js";
import type { Inbound } from "./contract.js";

/** A turn whose message another process took over before it was stored (see `ClaimLost`): that one answers it. */
export function leftToTaker(key: string): void {
  log.warn({ key }, "another process took this message over while this one stalled; it answers it");
}

/**
 * Who answers for a message between its delivery and its answer. Slack keeps delivering
 * a message until it is acknowledged, and the acknowledgement waits until the message is
 * stored (`Inbound.onStored`): kept while it waits, in its turn's record, or handed over.
 * Its dedupe claims are marked held in that very write (`claimsOf`), so a redelivery
 * leaves it to whoever answers from the store, and takes over only a message whose process
 * died before storing it.
 */
export class MessageCustody {
  private readonly told = new WeakSet<Inbound>();

  constructor(private readonly deps: { dedupe: Dedupe; lock: Pick<ThreadLock, "alive"> }) {}

  /** A redelivery's sighting (see `Dedupe.redelivered`). */
  redelivered(id: string, waits = true): Promise<boolean> {
    return this.deps.dedupe.redelivered(id, (owner) => this.deps.lock.alive(owner), waits);
  }

  /**
   * A turn's hooks for its message's record: its claims, held in the record's own write,
   * then the message stored and `copy`'s own (see `WaitingKeeper.starting`).
   */
  hooks(inbound: Inbound, copy: { recorded: () => void }): { claims?: Claims; recorded(): void } {
    const claims = this.claimsOf(inbound);
    return {
      ...(claims ? { claims } : {}),
      recorded: () => {
        this.stored(inbound);
        copy.recorded();
      },
    };
  }

  /** The message's claims, for the write that stores it to hold (see `Dedupe.holding`). */
  claimsOf(inbound: Inbound): Claims | undefined {
    return this.deps.dedupe.holding([inbound.id, ...(inbound.claims ?? [])]);
  }

  /** The message is in the store: its platform may stop delivering it. */
  stored(inbound: Inbound): void {
    if (this.told.has(inbound)) return;
    this.told.add(inbound);
    inbound.onStored?.();
  }
}
