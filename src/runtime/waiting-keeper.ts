import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { log } from "../log.js";
import type { Claims } from "../store/claims.js";
import { ClaimLost } from "../store/locks.js";
import type { Lease } from "../store/state.js";
import type { TookCopies } from "../store/turns.js";
import type { Kept, WaitingMessages } from "../store/waiting-messages.js";
import type { Inbound } from "./contract.js";
import { leftToTaker, type MessageCustody } from "./message-custody.js";
import { inputOf } from "./turn-input.js";

/**
 * How long a message waits for its thread's lock before it is kept in the store, when no
 * turn is known to be ahead of it (the store is slow to answer): most get the lock sooner,
 * and keeping each would cost three writes a turn. One known to wait (behind a turn of
 * this process, or of another) is kept at once.
 */
export const KEEP_AFTER_MS = 500;

/** How many times, and how far apart, a kept copy's removal is tried when the store fails it. */
const REMOVE_TRIES = 5;
const REMOVE_EVERY_MS = 2_000;

/**
 * Keeps the messages of this process that wait behind another turn of their thread in the
 * store (see `WaitingMessages`), from when they queue until their turn begins, or they are
 * handed over or noted. A kill -9 meanwhile leaves them for whoever next holds the thread.
 */
export class WaitingKeeper {
  /** Each kept message, and whether its writes all landed. */
  private readonly kept = new Map<Inbound, { kept: Kept; written: Promise<boolean> }>();
  private readonly timers = new Map<Inbound, NodeJS.Timeout>();
  /** Removals under way or to be tried again: a stop waits for them (see `settled`). */
  private readonly removing = new Set<Promise<unknown>>();

  constructor(
    private readonly messages: WaitingMessages | undefined,
    private readonly owner: string,
    private readonly custody?: Pick<MessageCustody, "stored" | "claimsOf">,
  ) {}

  /** The message queued: kept at once behind a turn of this process, else once it has waited `KEEP_AFTER_MS`. */
  queued(inbound: Inbound, behindOwn: boolean): void {
    if (!this.messages) return;
    if (behindOwn) {
      this.keep(inbound);
      return;
    }
    const timer = setTimeout(() => this.keep(inbound), KEEP_AFTER_MS);
    timer.unref();
    this.timers.set(inbound, timer);
  }

  /** The message is known to wait for another process (see `ThreadLock.run`): kept now. */
  waits(inbound: Inbound): void {
    if (!this.messages || !this.timers.has(inbound)) return;
    clearTimeout(this.timers.get(inbound));
    this.keep(inbound);
  }

  /**
   * A message this stopping process will not answer: handed over (under the id it was kept
   * with, so that a process adopting the kept copy too hands it once), or else given the
   * restart note. When neither went out, a kept copy stays, for the next process to answer.
   */
  async refuse(
    inbound: Inbound,
    how: { handOff?: (id?: string, claims?: Claims) => Promise<boolean>; note: () => Promise<void> },
  ): Promise<void> {
    const id = this.kept.get(inbound)?.kept.id;
    // Handed over is stored too: a redelivery leaves it to the process it went to (its
    // claims are held as it is handed), and one another process took over is that one's.
    const handed = how.handOff
      ? await how
          .handOff(id, this.custody?.claimsOf(inbound))
          .catch((err: unknown) => (err instanceof ClaimLost ? "taken" : false))
      : false;
    if (handed === "taken") {
      leftToTaker(inbound.key);
      await this.done(inbound);
      return;
    }
    if (handed) this.custody?.stored(inbound);
    const settled =
      handed ||
      (await how.note().then(
        () => true,
        (err: unknown) => {
          log.warn({ err, key: inbound.key }, "could not post the restart note");
          return false;
        },
      ));
    if (settled) await this.done(inbound);
  }

  /**
   * Its turn begins here, under the thread's lock (`lease`): no copy is kept from now on.
   * Undefined when it is not to run here, as another process adopted the kept copy while
   * this one looked dead (a stall past its heartbeat). Else `took`, the copy the turn's
   * record is to name (`TurnRecord.took`), and `recorded`, to call once the record is
   * written, or the turn ended without one (the store failed it): the copy goes then.
   */
  async starting(
    inbound: Inbound,
    lease: Lease | undefined,
  ): Promise<{ took: TookCopies | undefined; recorded: () => void } | undefined> {
    clearTimeout(this.timers.get(inbound));
    this.timers.delete(inbound);
    const recorded = () => void this.done(inbound, lease);
    const entry = this.kept.get(inbound);
    const messages = this.messages;
    // Not kept, or not whole (`done` takes back what landed): nothing for the record to name.
    if (!entry || !messages || !(await entry.written)) return { took: undefined, recorded };
    // Under the lock nobody adopts it now: only one that did before is found here.
    const there = await messages.holds(entry.kept).catch((err: unknown) => {
      log.warn({ err, key: inbound.key }, "could not tell whether a waiting message is still this process's");
      return true;
    });
    if (there) return { took: { waiting: { id: entry.kept.id, owner: entry.kept.owner } }, recorded };
    this.kept.delete(inbound);
    log.info({ key: inbound.key }, "a waiting message was taken over by another process, which answers it");
    return undefined;
  }

  /**
   * Its turn's record is written (under the thread's lock, `lease`), or it was handed over
   * or noted: the kept copy goes. False when another process took it first (see
   * `WaitingMessages.forget`).
   */
  async done(inbound: Inbound, lease?: Lease): Promise<boolean> {
    clearTimeout(this.timers.get(inbound));
    this.timers.delete(inbound);
    const entry = this.kept.get(inbound);
    const messages = this.messages;
    if (!entry || !messages) return true;
    this.kept.delete(inbound);
    // Partly written (the store failed one of its writes): no claim to make, only what landed to take back.
    if (!(await entry.written)) {
      this.removeLater(messages, entry.kept, 0);
      return true;
    }
    const removal = messages.forget(entry.kept, lease);
    this.during(removal);
    const took = await removal.catch((err: unknown) => {
      log.warn({ err, key: inbound.key }, "could not take a waiting message out of the store; trying again");
      this.removeLater(messages, entry.kept, 1);
      return true;
    });
    if (!took)
      log.info({ key: inbound.key }, "a waiting message was taken over by another process, which answers it");
    return took;
  }

  /** Resolves once the removals under way have landed or given up (a stop waits for this before it stops beating). */
  async settled(): Promise<void> {
    while (this.removing.size > 0) await Promise.allSettled([...this.removing]);
  }

  private keep(inbound: Inbound): void {
    this.timers.delete(inbound);
    const messages = this.messages;
    if (!messages || this.kept.has(inbound)) return;
    const kept: Kept = { key: inbound.key, id: randomUUID(), owner: this.owner };
    const written = messages.keep(kept, inputOf(inbound), this.custody?.claimsOf(inbound)).then(
      () => {
        log.debug({ key: inbound.key }, "kept a waiting message in the store");
        this.custody?.stored(inbound);
        return true;
      },
      (err: unknown) => {
        if (err instanceof ClaimLost) leftToTaker(inbound.key);
        else
          log.warn(
            { err, key: inbound.key },
            "could not keep a waiting message in the store; a crash now loses it",
          );
        return false;
      },
    );
    this.kept.set(inbound, { kept, written });
  }

  /**
   * A copy left in the store would be answered a second time once this process stops
   * beating: its removal is tried again, `REMOVE_TRIES` times in all, a few seconds apart.
   */
  private removeLater(messages: WaitingMessages, kept: Kept, tried: number): void {
    const attempt = async () => {
      if (tried > 0) await sleep(REMOVE_EVERY_MS, undefined, { ref: false });
      await messages.forget(kept);
    };
    this.during(
      attempt().catch((err: unknown) => {
        if (tried + 1 < REMOVE_TRIES) return this.removeLater(messages, kept, tried + 1);
        log.warn(
          { err, key: kept.key },
          "gave up taking a waiting message out of the store; it may be answered again",
        );
      }),
    );
  }

  private during(work: Promise<unknown>): void {
    const tracked = work.catch(() => undefined).finally(() => this.removing.delete(tracked));
    this.removing.add(tracked);
  }
}
