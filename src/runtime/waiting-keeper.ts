import { storedFiles } from "../core/inbound.js";
import { log } from "../log.js";
import type { Lease } from "../store/state.js";
import type { TurnInput } from "../store/turns.js";
import type { Kept, WaitingMessages } from "../store/waiting-messages.js";
import { askerTeam } from "./approvals/policy.js";
import type { Inbound } from "./contract.js";

/**
 * How long a message waits for its thread's lock before it is kept in the store, when no
 * turn of this process is ahead of it (another replica's is, or the store is slow). Most
 * get the lock sooner, and keeping each would cost two writes a turn.
 */
export const KEEP_AFTER_MS = 500;

/** What a process taking the message over needs to answer it. */
export function inputOf(inbound: Inbound): TurnInput {
  const { text, user, channel, sentAt } = inbound;
  const files = storedFiles(inbound.attachments);
  const team = askerTeam(inbound.platform, inbound.from);
  return {
    text,
    user,
    channel,
    ...(team ? { team } : {}),
    ...(sentAt === undefined ? {} : { sentAt }),
    ...(files.length ? { files } : {}),
  };
}

/**
 * Keeps the messages of this process that wait behind another turn of their thread in the
 * store (see `WaitingMessages`), from when they queue until their turn begins, or they are
 * handed over or noted. A kill -9 meanwhile leaves them for whoever next holds the thread.
 */
export class WaitingKeeper {
  private readonly kept = new Map<Inbound, Promise<Kept | undefined>>();
  private readonly timers = new Map<Inbound, NodeJS.Timeout>();

  constructor(
    private readonly messages: WaitingMessages | undefined,
    private readonly owner: string,
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

  /**
   * A message this stopping process will not answer: handed over (under the id it was kept
   * with, so that a process adopting the kept copy too hands it once), or else given the
   * restart note. When neither went out, a kept copy stays, for the next process to answer.
   */
  async refuse(
    inbound: Inbound,
    how: { handOff?: (id?: string) => Promise<boolean>; note: () => Promise<void> },
  ): Promise<void> {
    const id = (await this.kept.get(inbound))?.id;
    const handed = how.handOff ? await how.handOff(id).catch(() => false) : false;
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
   * Its turn began here (under the thread's lock, `lease`), or it was handed over or noted:
   * the kept copy goes. False when its turn is not to run here: another process adopted it
   * (see `WaitingMessages.forget`).
   */
  async done(inbound: Inbound, lease?: Lease): Promise<boolean> {
    clearTimeout(this.timers.get(inbound));
    this.timers.delete(inbound);
    const keeping = this.kept.get(inbound);
    if (!keeping || !this.messages) return true;
    this.kept.delete(inbound);
    const kept = await keeping;
    if (!kept) return true;
    const took = await this.messages.forget(kept, lease).catch((err: unknown) => {
      // Left, it would be answered a second time once this process stops beating.
      log.warn({ err, key: inbound.key }, "could not take an answered waiting message out of the store");
      return true;
    });
    if (!took)
      log.info({ key: inbound.key }, "a waiting message was taken over by another process, which answers it");
    return took;
  }

  private keep(inbound: Inbound): void {
    this.timers.delete(inbound);
    const messages = this.messages;
    if (!messages || this.kept.has(inbound)) return;
    const keeping = messages.keep(inbound.key, this.owner, inputOf(inbound)).then(
      (kept) => {
        log.debug({ key: inbound.key }, "kept a waiting message in the store");
        return kept;
      },
      (err: unknown) => {
        log.warn(
          { err, key: inbound.key },
          "could not keep a waiting message in the store; a crash now loses it",
        );
        return undefined;
      },
    );
    this.kept.set(inbound, keeping);
  }
}
