import { log } from "../log.js";
import type { Dedupe } from "../store/dedupe.js";
import type { ThreadLock } from "../store/locks.js";
import type { Inbound } from "./contract.js";

/**
 * Who answers for a message between its delivery and its answer. Slack keeps delivering
 * a message until it is acknowledged, and the acknowledgement waits until the message is
 * stored (`Inbound.onStored`): kept while it waits, or in its turn's record. Just before
 * that write its dedupe claim is marked held, so a redelivery leaves it to whoever answers
 * from the store, and takes over only a message whose process died before storing it.
 */
export class MessageCustody {
  private readonly held = new WeakSet<Inbound>();
  private readonly told = new WeakSet<Inbound>();

  constructor(private readonly deps: { dedupe: Dedupe; lock: Pick<ThreadLock, "alive"> }) {}

  /** A redelivery's sighting (see `Dedupe.redelivered`). */
  redelivered(id: string, waits = true): Promise<boolean> {
    return this.deps.dedupe.redelivered(id, (owner) => this.deps.lock.alive(owner), waits);
  }

  /**
   * The message is about to be written to the store. Asked before that write, on the same
   * connection: a crash between the two loses the message, rather than answering it twice.
   */
  storing(inbound: Inbound): void {
    if (this.held.has(inbound)) return;
    this.held.add(inbound);
    for (const id of [inbound.id, ...(inbound.claims ?? [])])
      this.deps.dedupe
        .hold(id)
        .catch((err: unknown) =>
          log.debug({ err, key: inbound.key }, "a message's claim was not marked held"),
        );
  }

  /** A turn's hooks for its message's record: held as it is written, stored, then `copy`'s own (see `WaitingKeeper.starting`). */
  hooks(inbound: Inbound, copy: { recorded: () => void }): { recording(): void; recorded(): void } {
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
