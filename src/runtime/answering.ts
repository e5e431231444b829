import { traceIdOf } from "../core/spans.js";
import type { Session } from "../store/sessions.js";
import type { Payer } from "../store/usage.js";
import { type AfterTurnDeps, hasWorkAfter, runAfterTurn } from "./after-turn.js";
import type { Reply } from "./contract.js";
import type { FeedbackDesk } from "./feedback.js";
import { fenceWrites } from "./scheduler/write-fence.js";
import type { RunningTurn, RunningTurns } from "./stops.js";
import type { TurnHooks, TurnResult } from "./turn.js";
import type { TurnAccounts, WorkKind } from "./turn-accounts.js";
import { logTurn } from "./turn-log.js";
import type { WorkInFlight } from "./work-in-flight.js";

/** What a turn's shell needs from the dispatcher around it. */
export interface AnsweringDeps {
  running: RunningTurns;
  accounts: TurnAccounts;
  ratings: FeedbackDesk | undefined;
  /** The hooks of a turn held under its thread's lock (the lock, its ending note). */
  hooksFor(turn: RunningTurn): TurnHooks;
  /** The process's work in flight, where the after-turn jobs are kept (and drained). */
  work: WorkInFlight;
  /** What the title and compression read and change. */
  after: AfterTurnDeps;
  /** True once the process is stopping: no new after-turn work then. */
  stopping(): boolean;
}

/**
 * What every kind of turn (a message's, a resumed one's, a taken-over one's) does around
 * its work: Stop offered, charged to its payer in its span, its rating offered under the
 * trace id, its outcome on the span and its log line, its title and compression after it.
 */
export class Answering {
  constructor(private readonly deps: AnsweringDeps) {}

  async run(
    kind: WorkKind,
    payer: Payer,
    turn: RunningTurn,
    reply: Reply,
    started: number,
    work: (hooks: TurnHooks) => Promise<TurnResult>,
    ended?: (result: TurnResult, ms: number) => void,
  ): Promise<void> {
    const { running, accounts, ratings } = this.deps;
    const tracked = running.track(payer.key, turn);
    reply.offerStop?.(tracked.ref);
    await accounts.run(payer, kind, async (span) => {
      ratings?.offer(payer, reply, traceIdOf(span));
      const result = await work(this.deps.hooksFor(turn)).finally(tracked.done);
      span.setAttribute("switchboard.outcome", result.parked ? "waiting" : result.outcome);
      const ms = Date.now() - started;
      ended?.(result, ms);
      logTurn(payer.key, result, ms, accounts.spent());
      if (result.session && result.outcome === "ok") this.afterTurn(result.session, reply, payer);
    });
  }

  /**
   * Title and compression run outside the lock: the thread's next message never waits for
   * them, and their writes are not fenced by the lock the turn let go of.
   */
  private afterTurn(session: Session, reply: Reply, payer: Payer): void {
    const { work, after, accounts } = this.deps;
    if (this.deps.stopping() || !hasWorkAfter(session, reply, after.agent)) return;
    fenceWrites(undefined, () =>
      work.afterTurn(session.key, (signal) =>
        accounts.run(payer, "after_turn", () => runAfterTurn(session, reply, after, signal)),
      ),
    );
  }
}
