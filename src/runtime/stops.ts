import type { Config } from "../config.js";
import { SwitchboardError } from "../core/errors.js";
import { randomRef } from "../core/random-ref.js";
import type { ThreadKey } from "../core/thread.js";
import { log } from "../log.js";
import { type CallPlace, mayDecide } from "./approvals/policy.js";
import { NOTHING_TO_STOP } from "./commands.js";
import type { Interaction } from "./contract.js";

/** A turn writing its answer: what Stop needs to find it, check the clicker and end it. */
export interface RunningTurn {
  controller: AbortController;
  asker: { id: string; name?: string };
  place: CallPlace;
  /** Who stopped it, once someone did. */
  stoppedBy?: string;
  /** Its Stop button's ref, once tracked. */
  ref?: string;
  /** The id of its record (`TurnRecord.id`), by which a Stop another replica took names it. */
  run?: string;
}

/** What someone who may not stop an answer is told. */
export const mayNotStop = (asker: { id: string; name?: string }): string =>
  `Only ${asker.name ?? asker.id} or an approver can stop this answer.`;

export const ENDED_NOTE = "That answer has already ended.";

/**
 * The answers being written in this process, one per thread, and the refs their Stop
 * buttons carry. A ref lives as long as its answer: a click after the end is told so.
 */
export class RunningTurns {
  private readonly byKey = new Map<ThreadKey, RunningTurn>();
  private readonly refs = new Map<string, ThreadKey>();

  constructor(
    private readonly config: Config,
    /** Told of each Stop button, for clicks that reach another replica (see RemoteStops). */
    private readonly onTrack?: (ref: string, key: ThreadKey) => void,
  ) {}

  /** Registers a turn as its thread's running answer; `done` forgets it. */
  track(key: ThreadKey, turn: RunningTurn): { ref: string; done: () => void } {
    const ref = `st${randomRef()}`;
    turn.ref = ref;
    this.byKey.set(key, turn);
    this.refs.set(ref, key);
    this.onTrack?.(ref, key);
    return {
      ref,
      done: () => {
        if (this.byKey.get(key) === turn) this.byKey.delete(key);
        this.refs.delete(ref);
      },
    };
  }

  /** The thread a Stop button's ref belongs to, while its answer runs. */
  keyOf(ref: string): ThreadKey | undefined {
    return this.refs.get(ref);
  }

  /**
   * Stops the thread's answer: the model request and running tool calls are aborted, and
   * the answer ends with "Stopped by …". Only the asker or an approver may. The sentence
   * is for whoever asked to stop; empty when the answer itself shows that it stopped.
   */
  async stop(key: ThreadKey, by: Interaction["user"], inGroups?: Interaction["inGroups"]): Promise<string> {
    const turn = this.byKey.get(key);
    if (!turn) return NOTHING_TO_STOP;
    if (!(await mayDecide(this.config, turn.place, turn.asker.id, by, inGroups)))
      return mayNotStop(turn.asker);
    this.end(key, turn, by.name ?? by.id);
    return "";
  }

  /** The Stop buttons offered for the answers written here now, with their threads. */
  buttons(): [ref: string, key: ThreadKey][] {
    return [...this.refs];
  }

  /** The threads whose answers are written here now. */
  keys(): ThreadKey[] {
    return [...this.byKey.keys()];
  }

  /**
   * Stops the thread's answer for a Stop another replica took and checked: the turn the
   * request names, and the one under Stop button `ref` if a button was clicked. False
   * when that answer is not written here (any more): a later answer of the thread goes on.
   */
  stopAsked(key: ThreadKey, request: { by: string; run?: string; ref?: string }): boolean {
    const turn = this.byKey.get(key);
    if (!turn) return false;
    if (request.run !== undefined && request.run !== turn.run) return false;
    if (request.ref !== undefined && request.ref !== turn.ref) return false;
    this.end(key, turn, request.by);
    return true;
  }

  private end(key: ThreadKey, turn: RunningTurn, by: string): void {
    if (turn.stoppedBy !== undefined) return;
    turn.stoppedBy = by;
    log.info({ key, by }, "answer stopped");
    turn.controller.abort(new SwitchboardError("stopped", `Stopped by ${turn.stoppedBy}.`));
  }
}
