import { ContextSlot } from "../../core/async-context.js";

/*
 * The thread's lock, as the platform writes made under it see it. Every write of a turn
 * (its answer's posts and edits, statuses, files, questions, notes) goes through its
 * connection's write scheduler, which asks the fence of the work that asked for the write
 * at the moment it grants it: the last moment before the platform call.
 */

const slot = new ContextSlot<(() => boolean) | undefined>("write fence");

/**
 * Runs `fn` with every platform write it asks for (through a write scheduler, also from
 * the timers and loops it starts) granted only while `holds()` says so. `undefined`: no
 * fence, for work that outlives the lock (titles and compression after the turn).
 */
export function fenceWrites<T>(holds: (() => boolean) | undefined, fn: () => T): T {
  return slot.run(holds, fn);
}

/** The fence of the work running now, if it has one. */
export function currentFence(): (() => boolean) | undefined {
  return slot.get();
}

/**
 * A write the fence refused as it was granted: nothing was written. Not a `WriteDropped`,
 * which a writer meets again at its next try: the lock is gone for good.
 */
export class WriteFenced extends Error {
  constructor(what: string) {
    super(`${what} not written: the thread's lock may be another process's now`);
    this.name = "WriteFenced";
  }
}
