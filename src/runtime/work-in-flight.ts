import { setTimeout as sleep } from "node:timers/promises";
import type { ThreadKey } from "../core/thread.js";
import { log } from "../log.js";
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
 * How long a stopping process waits, once its turns are aborted, for them to hand over or
 * end. A turn stuck in a call that ignores the abort (a read waiting out a minute-long 429)
 * is left to the others, which take it over once this process stops beating; a message
 * still waiting for a lock another replica holds is handed over (or, with no other
 * replica alive, gets the restart note).
 */
const SETTLE_AFTER_ABORT_MS = 5_000;

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

  /**
   * Runs a thread's after-turn job unless one is running: a turn that ends while the last
   * one's title is still being made would only ask the model for the same title again.
   */
  afterTurn(key: ThreadKey, run: (signal: AbortSignal) => Promise<void>): void {
    if (this.afterTurns.has(key)) return;
    const controller = new AbortController();
    const job: InFlight = { controller, done: Promise.resolve() };
    job.done = run(controller.signal)
      .catch((err: unknown) => log.warn({ err, key }, "after-turn work failed"))
      .finally(() => this.afterTurns.delete(key));
    this.afterTurns.set(key, job);
  }

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

  /** The turns still running (or queued) when `graceMs` is over; 0 when all ended within it. */
  async unfinishedAfter(graceMs: number): Promise<number> {
    const grace = new AbortController();
    const timedOut = await Promise.race([
      this.allTurns().then(() => false),
      sleep(graceMs, true, { ref: false, signal: grace.signal }).catch(() => false),
    ]);
    grace.abort();
    return timedOut ? this.turns.size : 0;
  }

  abortAll(reason: unknown): void {
    for (const t of [...this.turns, ...this.afterTurns.values()]) t.controller.abort(reason);
  }

  /**
   * Waits `SETTLE_AFTER_ABORT_MS` for the aborted work to end; then the messages still
   * waiting for their thread are `refuse`d (handed over or noted), for as long again.
   */
  async settleOrLeave(refuse: (inbound: Inbound) => Promise<void>): Promise<void> {
    const settled = Promise.all([
      this.allTurns(),
      ...[...this.afterTurns.values()].map((t) => t.done),
      ...this.refusals,
    ]).then(() => true);
    if (await Promise.race([settled, sleep(SETTLE_AFTER_ABORT_MS, false, { ref: false })])) return;
    const stuck = [...this.turns];
    const waiting = stuck.flatMap((t) => (t.queued ? [t] : []));
    log.warn(
      { running: stuck.length - waiting.length, waiting: waiting.length },
      "turns did not settle after the grace: the others take them over, or they get the restart note",
    );
    const notes = waiting.map((t) => {
      t.noted = true;
      return refuse(t.queued!);
    });
    await Promise.race([Promise.all(notes), sleep(SETTLE_AFTER_ABORT_MS, undefined, { ref: false })]);
  }

  private allTurns(): Promise<unknown> {
    return Promise.all([...this.turns].map((t) => t.done));
  }

  /** Resolves once every message being checked is queued or refused. */
  async checked(): Promise<void> {
    while (this.accepting.size > 0) await Promise.allSettled([...this.accepting]);
  }
}
