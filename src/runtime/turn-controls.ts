import type { Held } from "../store/locks.js";
import type { RunningTurn } from "./stops.js";
import type { TurnHooks } from "./turn.js";

/** What the controls read of the process around its turns. */
export interface ProcessState {
  /** The process is stopping (the drain has begun). */
  stopping(): boolean;
  /** Other replicas take over what the drain stops. */
  handingOver(): boolean;
  /** The sentence a turn the drain stops ends with when nobody takes it over. */
  note: string;
}

/**
 * What stops this process's turns, and what their hooks tell them of it: a Stop aborts one
 * turn's controller, the drain aborts every one, and the loss of a thread's lock every one
 * run under it.
 */
export class TurnControls {
  private readonly held = new WeakMap<AbortController, Held>(); // each turn's hold on its lock

  constructor(private readonly process: ProcessState) {}

  /** A turn's lock, as it holds it: losing the lock stops the turn. */
  hold(controller: AbortController, held: Held): void {
    this.held.set(controller, held);
    // Lost already when it was taken (the store fell silent meanwhile): an abort event is never sent twice.
    if (held.lost.aborted) controller.abort(held.lost.reason);
    else held.lost.addEventListener("abort", () => controller.abort(held.lost.reason), { once: true });
  }

  /**
   * A controller of its own for one turn of several run one after the other under the
   * lock `parent` holds (a cut-off turn finished before a thread's new message, the
   * messages handed over behind it): the drain and the lost lock reach it through
   * `parent`, while a Stop of its answer aborts it alone, and the turns after it still run.
   */
  async own(parent: AbortController, run: (controller: AbortController) => Promise<void>): Promise<void> {
    const controller = new AbortController();
    const held = this.held.get(parent);
    if (held) this.held.set(controller, held);
    const follow = () => controller.abort(parent.signal.reason);
    if (parent.signal.aborted) follow();
    else parent.signal.addEventListener("abort", follow, { once: true });
    try {
      await run(controller);
    } finally {
      parent.signal.removeEventListener("abort", follow);
    }
  }

  hooksFor(turn: RunningTurn): TurnHooks {
    const { controller } = turn;
    const held = this.held.get(controller);
    return {
      ...(held ? { held } : {}),
      interruptedNote: () => this.endingNote(turn),
      handingOver: () =>
        this.process.handingOver() && controller.signal.aborted && turn.stoppedBy === undefined,
    };
  }

  /** The sentence that ends an aborted answer: who stopped it, or the restart note. */
  private endingNote(turn: RunningTurn): string | undefined {
    if (turn.stoppedBy !== undefined) return `Stopped by ${turn.stoppedBy}.`;
    return turn.controller.signal.aborted && this.process.stopping() ? this.process.note : undefined;
  }
}
