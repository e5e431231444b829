import type { ThreadKey } from "../core/thread.js";
import type { Inbound } from "./contract.js";

/** A turn (or an after-turn job) this process is running or has queued. */
export interface InFlight {
  controller: AbortController;
  done: Promise<void>;
  /** The message, while its turn waits for the thread's lock. */
  queued?: Inbound;
  /** Handed over (or given the restart note) while it still waited: when the lock comes, nothing is left to do. */
  noted?: boolean;
}

/**
 * Everything a process owes before it may stop, by stage: messages being checked, turns
 * queued or running, messages refused while stopping (being handed over or noted), and
 * the titles and compressions running after their turns. The drain waits on these.
 */
export class WorkInFlight {
  /** Turns queued for their thread's lock or running. */
  readonly turns = new Set<InFlight>();
  /** Messages being checked (access, duplicates) before they are queued or refused. */
  readonly accepting = new Set<Promise<unknown>>();
  /** Messages that arrived while stopping, being handed over or noted. */
  readonly refusals = new Set<Promise<unknown>>();
  /** Titles and compressions running after their turn, outside the thread's lock. */
  readonly afterTurns = new Map<ThreadKey, InFlight>();
  /** Turns waiting for their thread's lock, per thread (for /metrics). */
  private readonly waiting = new Map<ThreadKey, number>();

  /** `work`, counted in `set` until it settles. */
  static during<T>(set: Set<Promise<unknown>>, work: Promise<T>): Promise<T> {
    set.add(work);
    return work.finally(() => set.delete(work));
  }

  /** One more turn waiting in `key`'s queue; the returned function (idempotent) takes it out. */
  queue(key: ThreadKey): () => void {
    this.waiting.set(key, (this.waiting.get(key) ?? 0) + 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const n = (this.waiting.get(key) ?? 1) - 1;
      if (n > 0) this.waiting.set(key, n);
      else this.waiting.delete(key);
    };
  }

  /** Turns waiting behind another turn of their thread: in total and in the longest queue. */
  queueStats(): { queued: number; longest: number } {
    const counts = [...this.waiting.values()];
    return { queued: counts.reduce((a, b) => a + b, 0), longest: Math.max(0, ...counts) };
  }

  /** Resolves when no turn and no after-turn job is running. */
  async settled(): Promise<void> {
    while (this.turns.size > 0 || this.afterTurns.size > 0) {
      await Promise.all([...this.turns, ...this.afterTurns.values()].map((t) => t.done));
    }
  }

  /** Resolves once every message being checked is queued or refused. */
  async checked(): Promise<void> {
    while (this.accepting.size > 0) await Promise.allSettled([...this.accepting]);
  }
}
