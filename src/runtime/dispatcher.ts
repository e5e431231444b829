import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { SwitchboardError, toUserFacing } from "../core/errors.js";
import type { FormValues } from "../core/forms.js";
import type { InboundFile } from "../core/inbound.js";
import { platformOf, type ThreadKey } from "../core/thread.js";
import { log } from "../log.js";
import { LockLost } from "../store/locks.js";
import type { TurnRecord } from "../store/turns.js";
import { Access, commandOrigin, REFUSED_NOTE } from "./access.js";
import { Answering } from "./answering.js";
import { ApprovalDesk } from "./approvals/desk.js";
import { findCommand, NOTHING_TO_STOP, runCommand } from "./commands.js";
import type {
  Adapter,
  Command,
  Inbound,
  Interaction,
  InteractionReply,
  Reply,
  TurnRunner,
} from "./contract.js";
import type { DispatcherDeps } from "./dispatcher-deps.js";
import { FeedbackDesk } from "./feedback.js";
import { FormDesk } from "./forms/desk.js";
import { accept, threadKnown } from "./intake.js";
import { routeInteraction } from "./interactions.js";
import { MessageCustody } from "./message-custody.js";
import { expandPrompt, expandPromptForm, type PromptOptions, type PromptOutcome } from "./prompts.js";
import { RemoteStops } from "./remote-stops.js";
import { fenceWrites } from "./scheduler/write-fence.js";
import { type RunningTurn, RunningTurns } from "./stops.js";
import { resumeTurn, takeOverTurn } from "./stored-turns.js";
import { Takeovers, type Under } from "./takeover.js";
import { runTurn, type TurnDeps, type TurnHooks, type TurnResult } from "./turn.js";
import { payerOf, TurnAccounts, type WorkKind } from "./turn-accounts.js";
import { TurnControls } from "./turn-controls.js";
import { observed } from "./turn-log.js";
import { WaitingKeeper } from "./waiting-keeper.js";
import { type InFlight, WorkInFlight } from "./work-in-flight.js";

export const INTERRUPTED_NOTE = "Interrupted by a restart; ask again.";

/** Dedupe, per-thread queue, session load, run the agent, drive the Reply. Shared by every adapter. */
export class Dispatcher implements TurnRunner {
  private readonly work = new WorkInFlight();
  private stopping = false;
  private readonly desk: ApprovalDesk;
  private readonly access: Access;
  private readonly running: RunningTurns; // each thread's answer being written here, for Stop
  private readonly remote: RemoteStops | undefined; // and those written by other replicas
  private readonly turnDeps: TurnDeps;
  private readonly takeovers: Takeovers;
  private readonly accounts: TurnAccounts;
  private readonly ratings: FeedbackDesk | undefined;
  private readonly answering: Answering;
  private readonly keeper: WaitingKeeper; // messages waiting for their thread, kept in the store
  private readonly custody: MessageCustody;
  /** MCP elicitation: servers' questions to people during tool calls. */
  private readonly forms: FormDesk | undefined;
  /** Other replicas were alive when this one began to stop: its unfinished turns go to them. */
  private handingOver = false;
  private readonly controls = new TurnControls({
    stopping: () => this.stopping,
    handingOver: () => this.handingOver,
    note: INTERRUPTED_NOTE,
  });

  constructor(private readonly deps: DispatcherDeps) {
    this.desk = new ApprovalDesk({
      config: deps.config,
      ledger: deps.ledger,
      book: deps.approvals,
      resume: (key) => this.resumeWaiting(key),
      replyFor: (key, channel) => this.replyFor(key, channel),
    });
    this.forms = deps.forms ? new FormDesk({ config: deps.config, book: deps.forms }) : undefined;
    this.turnDeps = { ...deps, desk: this.desk, owner: deps.lock.owner, formDesk: this.forms };
    this.access = new Access(deps.config);
    this.custody = new MessageCustody(deps);
    this.keeper = new WaitingKeeper(deps.waiting, deps.lock.owner, this.custody);
    this.accounts = new TurnAccounts(deps);
    this.ratings = deps.feedback ? new FeedbackDesk(deps.feedback, deps.onVote) : undefined;
    this.remote = deps.stops
      ? new RemoteStops({ ...deps, stops: deps.stops, running: () => this.running })
      : undefined;
    this.running = new RunningTurns(deps.config, (ref, key) => this.remote?.offered(ref, key));
    this.answering = new Answering({
      running: this.running,
      accounts: this.accounts,
      ratings: this.ratings,
      hooksFor: (turn) => this.controls.hooksFor(turn),
      work: this.work,
      after: deps,
      stopping: () => this.stopping,
    });
    this.takeovers = new Takeovers({
      ledger: deps.ledger,
      lock: deps.lock,
      desk: this.desk,
      ...(deps.waiting ? { waiting: deps.waiting } : {}),
      note: INTERRUPTED_NOTE,
      track: (key, work) => this.track(key, work),
      goOn: (record, reply, controller, attachments) => this.goOn(record, reply, controller, attachments),
      turnedAway: (payer, reply) => this.accounts.turnedAway(payer, reply),
    });
  }

  readonly firstSight = (id: string): Promise<boolean> => this.deps.dedupe.firstSight(id);
  readonly redelivered = (id: string, waits = true) => this.custody.redelivered(id, waits);
  readonly release = (id: string) => this.deps.dedupe.release(id);

  readonly knows = (key: ThreadKey, opening?: string) => threadKnown(this.deps, key, opening);
  readonly admit = (who: Pick<Inbound, "platform" | "channel" | "user" | "from">) => this.access.verdict(who);

  async handle(inbound: Inbound): Promise<void> {
    // The drain's from its first step: one still being deduped at a stop is handed over, not lost.
    const accepted = await WorkInFlight.during(this.work.accepting, accept(inbound, this));
    if (accepted) await this.dispatch(accepted);
  }

  /** `again`: queued once already, its lock lost before its turn began (see `turn`). */
  private async dispatch(inbound: Inbound, again = false): Promise<void> {
    if (this.stopping) {
      // Drained like a turn: the process does not exit before it is handed over or noted.
      return WorkInFlight.during(this.work.refusals, this.refuse(inbound));
    }
    // Tracked from here: a turn queued behind another is owed an answer (or the note) at a stop.
    const controller = new AbortController();
    const entry: InFlight = { controller, done: Promise.resolve(), queued: inbound };
    this.work.turns.add(entry);
    if (!again) this.keeper.queued(inbound, this.deps.lock.queued(inbound.key) > 0);
    const leaveQueue = this.work.queue(inbound.key);
    let retried: Promise<void> | undefined;
    entry.done = this.deps.lock
      .run(
        inbound.key,
        async (held) => {
          if (entry.noted) return;
          this.controls.hold(controller, held);
          leaveQueue();
          return fenceWrites(held.current, () =>
            this.turn(inbound, { controller, lease: held.lease }, entry),
          );
        },
        inbound.sentAt,
        () => this.keeper.waits(inbound),
      )
      .then((lost) => {
        // Queued again before this entry goes, which a stop then waits for: the message is
        // owed still, whether it is answered, handed over or noted.
        if (lost) retried = this.dispatch(inbound, true);
      })
      .catch(async (err: unknown) => {
        if (entry.noted) return;
        if (this.stopping) {
          log.debug({ err, key: inbound.key }, "a queued turn's wait failed while stopping");
          entry.noted = true;
          return this.refuse(inbound);
        }
        log.error({ err, key: inbound.key }, "turn could not run");
        await inbound.reply.notice(toUserFacing(err).message).catch(() => undefined);
        await this.keeper.done(inbound);
      })
      .finally(() => {
        leaveQueue();
        this.work.turns.delete(entry);
      })
      .then(() => retried);
    await entry.done;
  }

  /** Resolves when no turn and no after-turn job is running (tests and benchmarks wait for it). */
  settled(): Promise<void> {
    return this.work.settled();
  }

  /** Turns waiting behind another turn of their thread: in total and in the longest queue. */
  queueStats(): { queued: number; longest: number } {
    return this.work.queueStats();
  }

  async interact(interaction: Interaction): Promise<InteractionReply | undefined> {
    const remote = this.remote;
    return routeInteraction(interaction, {
      firstSight: (id) => this.firstSight(id),
      running: this.running,
      ...(remote ? { stopElsewhere: (ref, by, inGroups) => remote.request({ ref }, by, inGroups) } : {}),
      ...(this.deps.approvals ? { desk: this.desk } : {}), // none in adapter tests
      feedback: this.ratings,
      forms: this.forms,
    });
  }

  /** Runs a parked turn on once its approvals are decided (or expired), in a reply rebuilt from its record. */
  resumeWaiting(key: ThreadKey): void {
    const { ledger } = this.deps;
    const work = this.track(key, async ({ controller }) => {
      const record = await ledger.get(key);
      if (!record?.waiting) return;
      const reply = this.replyFor(key, record.address?.channel);
      if (!reply) {
        log.warn({ key }, "a decided approval's platform is not running here; its turn waits for it");
        return;
      }
      const outcome = await this.desk.outcome(key, record.waiting, reply);
      // Stopped before it went on: left parked, for a replica or the next start to run whole.
      if (!outcome || controller.signal.aborted) return;
      const { user, channel } = record.waiting;
      await this.stored("resume", record, { user, channel }, reply, controller, (signal, hooks) =>
        resumeTurn(record, outcome, reply, this.turnDeps, signal, hooks),
      );
    });
    if (!work) log.info({ key }, "stopping: a decided turn is left to the other replicas or the next start");
  }

  /**
   * Goes on with a turn whose process stopped (see Takeovers), under the lock `parent`
   * holds, which may run more turns after it: a Stop of this one ends it alone.
   */
  private async goOn(
    record: TurnRecord,
    reply: Reply,
    parent: AbortController,
    attachments: InboundFile[],
  ): Promise<void> {
    const input = record.input;
    if (!input) return;
    await this.controls.own(parent, (controller) =>
      this.stored("takeover", record, input, reply, controller, (signal, hooks) =>
        takeOverTurn(record, reply, this.turnDeps, signal, hooks, attachments),
      ),
    );
  }

  /**
   * A turn run from its record, not from an event: Stop offered, and logged, as any turn.
   * No budget is checked here: the turn was admitted when it began (a handed message, by
   * `Takeovers` before its first run), and one stopped past a cap would leave its answer
   * half written.
   */
  private async stored(
    kind: WorkKind,
    record: TurnRecord,
    asked: { user: RunningTurn["asker"]; channel: string },
    reply: Reply,
    controller: AbortController,
    run: (signal: AbortSignal, hooks: TurnHooks) => Promise<TurnResult>,
  ): Promise<void> {
    const started = Date.now();
    const { key, id } = record;
    const place = { platform: platformOf(key) ?? "console", channel: asked.channel };
    const turn: RunningTurn = { controller, asker: asked.user, place, ...(id ? { run: id } : {}) };
    const payer = { platform: place.platform, user: asked.user.id, channel: asked.channel, key };
    await this.answering.run(kind, payer, turn, reply, started, (hooks) => run(controller.signal, hooks));
  }

  /** Runs `work` under the thread's lock as one of this process's turns (drained with them); undefined when stopping. */
  private track(key: ThreadKey, work: (under: Under) => Promise<void>): Promise<void> | undefined {
    if (this.stopping) return undefined;
    const controller = new AbortController();
    const entry: InFlight = { controller, done: Promise.resolve() };
    this.work.turns.add(entry);
    entry.done = this.deps.lock
      .run(key, (held) => {
        this.controls.hold(controller, held);
        // Every platform write of the work is granted only while the lock is this process's.
        return fenceWrites(held.current, () => work({ controller, lease: held.lease }));
      })
      .catch((err: unknown) => log.error({ err, key }, "a stored turn could not go on"))
      .finally(() => this.work.turns.delete(entry));
    return entry.done;
  }

  private replyFor(key: ThreadKey, channel?: string): Reply | undefined {
    return this.takeovers.adapterFor(key)?.replyFor?.(key, { messages: [], ...(channel ? { channel } : {}) });
  }

  /** Stops the thread's answer in progress (see RunningTurns.stop), here or in the replica writing it. */
  async stop(key: ThreadKey, by: Interaction["user"], inGroups?: Interaction["inGroups"]): Promise<string> {
    const said = await this.running.stop(key, by, inGroups);
    if (said !== NOTHING_TO_STOP || !this.remote) return said;
    return (await this.remote.request({ key }, by, inGroups)) ?? said;
  }

  readonly prompt = (text: string, opts: PromptOptions = {}): Promise<PromptOutcome> =>
    expandPrompt(this.deps.hub, text, opts);
  readonly promptForm = (ref: string, values: FormValues): Promise<PromptOutcome> =>
    expandPromptForm(this.deps.hub, ref, values);

  async command(cmd: Command): Promise<string> {
    if (cmd.platform !== "console" && !this.access.admits(commandOrigin(cmd))) return REFUSED_NOTE;
    const payer = { platform: cmd.platform, user: cmd.user.id, channel: cmd.channel ?? "", key: cmd.key };
    if (findCommand(cmd.name)?.asksModel) {
      const refusal = await this.accounts.refusal(payer);
      if (refusal) return refusal;
    }
    return this.accounts.run(payer, "command", () =>
      runCommand(cmd, {
        ...this.deps,
        stopTurn: async (key, by, inGroups) => (await this.stop(key, by, inGroups)) || "Stopped.",
        abandonWaiting: (key, lease) => this.desk.abandon(key, lease),
      }),
    );
  }

  /**
   * Graceful stop: refuse new turns, let running ones finish within `graceMs`, then stop the
   * rest: handed to live replicas (records stay, taken over from their last checkpoint) with
   * the messages waiting for their thread, or else each ends with the restart note.
   * Resolves when every turn has written its last word here.
   */
  async drain(graceMs: number): Promise<{ interrupted: number; handedOver: number }> {
    const { lock } = this.deps;
    // A store that does not answer in a second (cut off, failing over) has, as one that
    // fails, nobody to hand to: its client would hold the question for the whole outage.
    const othersBeat = async () =>
      (await Promise.race([lock.others().catch(() => []), sleep(1_000, [], { ref: false })])).length > 0;
    // Asked before the first message is refused: one that arrives now goes to the others.
    this.handingOver = await othersBeat();
    this.stopping = true;
    // Each is queued or refused once checked (from now on refused, and waited for below);
    // a check stuck on a store that does not answer holds the stop no longer than the grace.
    await Promise.race([this.work.checked(), sleep(graceMs, undefined, { ref: false })]);
    this.takeovers.close();
    this.desk.close();
    this.remote?.close();
    const left = await this.work.unfinishedAfter(graceMs);
    // Asked again at the end of the grace: the replicas seen at its start may have stopped too.
    if (left > 0) this.handingOver = await othersBeat();
    this.work.abortAll(new SwitchboardError("interrupted", INTERRUPTED_NOTE));
    await this.work.settleOrLeave((inbound) => this.refuse(inbound));
    // The kept copies of what was answered, handed or noted go first: the others adopt what is left.
    await Promise.race([this.keeper.settled(), sleep(2_000, undefined, { ref: false })]);
    // The others take over what was handed to them at once, not after the heartbeat expires.
    await lock.close();
    const handedOver = this.handingOver ? left : 0;
    if (handedOver) log.info({ turns: handedOver }, "handed unfinished turns to the other replicas");
    return { interrupted: left - handedOver, handedOver };
  }

  /**
   * Start-up: turns a process left unfinished (kill -9, a replica that handed them over)
   * are finished in their own replies, or end with the restart note; then this process
   * watches for such turns (see Takeovers).
   */
  async recoverInterrupted(adapters: Adapter[]): Promise<number> {
    this.remote?.start();
    return this.takeovers.start(adapters);
  }

  /** A message that will not be answered here: another replica answers it, or it gets the restart note. */
  private refuse(inbound: Inbound): Promise<void> {
    return this.keeper.refuse(inbound, {
      ...(this.handingOver ? { handOff: (id, claims) => this.takeovers.handOff(inbound, id, claims) } : {}),
      note: () => inbound.reply.stream().fail(INTERRUPTED_NOTE),
    });
  }

  /** "lost": its lock was lost before it began, and it is to wait for the lock again. */
  private async turn(inbound: Inbound, under: Under, entry: InFlight): Promise<"lost" | undefined> {
    const { observer } = this.deps;
    const started = Date.now();
    // A turn this thread's last process left unfinished is finished first, in its own reply.
    // Until then the message is still owed (`entry.queued`): a stop meanwhile hands it over.
    const { controller } = under;
    const { signal } = controller;
    const known = signal.aborted ? undefined : await this.takeovers.settleBefore(inbound.key, under);
    if (entry.noted) return;
    delete entry.queued;
    // Lost while this process lives (its store fell silent): nobody adopts its kept copy,
    // and the note would be fenced too. It waits for the lock again, so for the store.
    if (signal.aborted && !this.stopping && signal.reason instanceof LockLost) return "lost";
    if (signal.aborted) return void (await this.refuse(inbound));
    const copy = await this.keeper.starting(inbound, under.lease);
    if (!copy) return;
    // Its record's id, known before the record is written: a Stop another replica takes names it.
    const run = randomUUID();
    const place = { platform: inbound.platform, channel: inbound.channel };
    const turn: RunningTurn = { controller, run, asker: inbound.user, place };
    const payer = payerOf(inbound);
    if (await this.accounts.turnedAway(payer, inbound.reply)) return void copy.recorded();
    await observed(observer, inbound, started, (end) =>
      this.answering.run(
        "turn",
        payer,
        turn,
        inbound.reply,
        started,
        (hooks) => {
          const firstVisible = (ms: number) => observer?.firstVisible?.(inbound, ms);
          const all = { firstVisible, ...this.custody.hooks(inbound, copy), ...hooks };
          return runTurn(inbound, this.turnDeps, controller.signal, all, known, { id: run, took: copy.took });
        },
        (result, ms) => end(result.outcome, ms, result.events),
      ),
    );
    copy.recorded();
  }
}
