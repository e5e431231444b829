import { type InboundFile, unreadableFile } from "../core/inbound.js";
import { platformOf, type ThreadKey } from "../core/thread.js";
import { log } from "../log.js";
import type { Claims } from "../store/claims.js";
import type { ThreadLock } from "../store/locks.js";
import type { Lease } from "../store/state.js";
import type { TurnInput, TurnLedger, TurnRecord } from "../store/turns.js";
import type { Payer } from "../store/usage.js";
import type { WaitingMessages } from "../store/waiting-messages.js";
import type { ApprovalDesk } from "./approvals/desk.js";
import type { Adapter, Inbound, Reply } from "./contract.js";
import { dropTaken, recordHanded } from "./handed-turns.js";
import type { Known } from "./replaced-record.js";
import { endWithNote } from "./takeover-note.js";
import { MAX_RESUMES, MAX_TAKEOVERS } from "./turn.js";
import { inputOf } from "./turn-input.js";

/**
 * How often the turns in the store are looked over: parked ones get their expiry armed
 * here too, and turns nobody runs are taken over (their process stopped, or this one
 * dropped them). A turn whose process died is found within this plus the heartbeat's
 * expiry (4 s); one this process dropped when its store fell silent, within this once the
 * store answers again.
 */
export const PENDING_WATCH_MS = 2_000;

export { RECOVER_ATTEMPTS } from "./takeover-note.js";

export interface TakeoverDeps {
  ledger: TurnLedger;
  lock: ThreadLock;
  desk: ApprovalDesk;
  /** Messages kept while they waited for their thread: those of a process that died are answered here. */
  waiting?: WaitingMessages;
  /** The sentence a turn that cannot be taken over ends with. */
  note: string;
  /**
   * Runs `work` as one of this process's turns (drained with them); `work` runs under the
   * thread's lock (`lease`, absent for a one-process lock). Resolves when it is done;
   * undefined when the process is stopping.
   */
  track(key: ThreadKey, work: (under: Under) => Promise<void>): Promise<void> | undefined;
  /**
   * Goes on with a turn from its record, in `reply`, under the thread's lock the caller
   * holds; `attachments`: the files of a handed message, fetched here.
   */
  goOn(
    record: TurnRecord,
    reply: Reply,
    controller: AbortController,
    attachments: InboundFile[],
  ): Promise<void>;
  /** True when the daily budgets refuse a turn of `payer`: its asker was told in `reply` (see TurnAccounts). */
  turnedAway(payer: Payer, reply: Reply): Promise<boolean>;
}

/**
 * What a turn run under a thread's lock goes by: what stops it, and the lease every write
 * of its record is fenced by, so that a write landing after the lock was lost (a stalled
 * process, a client sending what it queued while reconnecting) changes nothing.
 */
export interface Under {
  controller: AbortController;
  lease: Lease | undefined;
}

/**
 * Finds the turns whose process stopped before they did (kill -9, a lost machine, a
 * replica handing its turns over) and finishes them here: at start-up, while running
 * (every replica watches), and before a new message of such a thread is answered.
 */
export class Takeovers {
  private adapters: Adapter[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Threads this process is about to take over (queued for their lock): asked once. */
  private readonly claimed = new Set<ThreadKey>();
  /** Keys the last round found listed without a record. */
  private strays = new Set<ThreadKey>();
  /** Threads the last round found with messages kept by a process that died. */
  private withOrphans = new Set<ThreadKey>();

  constructor(private readonly deps: TakeoverDeps) {}

  /**
   * Start-up: every turn left by a process that is gone is taken over (or noted). Resolves
   * with how many once they are finished.
   */
  async start(adapters: Adapter[]): Promise<number> {
    this.adapters = adapters;
    // This process beats from now on, so that the others know it can take their turns.
    const others = await this.deps.lock.others().catch(() => []);
    if (others.length) log.info({ replicas: others.length + 1 }, "other replicas share this store");
    const pending = await this.deps.ledger.pending().catch((err: unknown) => {
      log.warn({ err }, "could not list the turns a crash interrupted");
      return [];
    });
    this.watch();
    const finishing: Promise<void>[] = [];
    for (const record of pending) {
      // Decided while the last process stopped: gone on with now, whenever it was decided.
      if (record.waiting) await this.parked(record, 0);
      else {
        const claimed = await this.claim(record);
        if (claimed) finishing.push(claimed.done);
      }
    }
    if (finishing.length) log.info({ turns: finishing.length }, "finishing the turns of a stopped process");
    await Promise.all(finishing);
    return finishing.length;
  }

  close(): void {
    clearInterval(this.timer);
  }

  /**
   * A thread's unfinished turn, finished under the lock the caller holds, before a new
   * message of the thread is answered. Under the lock nobody else runs it, whoever it
   * names: a process that is gone, or one still stopping that handed it over. Returns
   * the record left standing (a turn parked on approvals), for the new turn to read
   * without asking the store again; undefined once it is finished; `unsettled` when it
   * could not be: the new turn's record carries it (`TurnRecord.cutOff`).
   */
  async settleBefore(key: ThreadKey, under: Under): Promise<Known | undefined> {
    try {
      const record = await this.deps.ledger.get(key);
      // Messages a dead process kept while they waited came before this one (see orphanedThreads).
      if (!record && this.withOrphans.has(key)) {
        await this.answerHanded(key, under);
        return undefined;
      }
      if (!record || record.waiting) return { previous: record };
      await this.finish(record, under);
      return undefined;
    } catch (err) {
      // The new message is answered anyway; the watcher tries the old turn again after it.
      log.warn({ err, key }, "could not finish the thread's unfinished turn first");
      return { unsettled: true };
    }
  }

  private watch(): void {
    clearInterval(this.timer);
    this.timer = setInterval(() => {
      // Threads this process is answering (or queued for) are its own: not read at all, so
      // a busy process spends nothing on the watch.
      const mine = (key: ThreadKey) => this.deps.lock.queued(key) > 0;
      void this.deps.ledger
        .listed(mine)
        .then(async ({ records, strays }) => {
          for (const r of records) {
            if (r.waiting) void this.parked(r, PENDING_WATCH_MS);
            else void this.claim(r);
          }
          this.prune(strays);
        })
        .catch((err: unknown) => log.debug({ err }, "could not look over the pending turns"));
      void this.deps.ledger
        .handedThreads()
        .then((keys) => {
          for (const key of keys) if (!mine(key) && this.adapterFor(key)) this.claimHanded(key);
        })
        .catch((err: unknown) => log.debug({ err }, "could not look over the handed messages"));
      void this.orphanedThreads(mine).catch((err: unknown) =>
        log.debug({ err }, "could not look over the messages kept while they waited"),
      );
    }, PENDING_WATCH_MS);
    this.timer.unref();
  }

  /**
   * Threads with a kept message whose process died: answered as handed ones are, under the
   * thread's lock, at once when the thread is idle here, else before its next message.
   */
  private async orphanedThreads(mine: (key: ThreadKey) => boolean): Promise<void> {
    const waiting = this.deps.waiting;
    if (!waiting) return;
    const found = new Set<ThreadKey>();
    for (const key of await waiting.threads()) {
      if (!this.adapterFor(key) || (await waiting.orphans(key, this.alive)).length === 0) continue;
      found.add(key);
      if (!mine(key)) this.claimHanded(key);
    }
    this.withOrphans = found;
  }

  private readonly alive = (owner: string) => this.deps.lock.alive(owner);

  /** Keys listed without a record last round too (not one being written now): taken off the list. */
  private prune(strays: ThreadKey[]): void {
    const before = this.strays;
    this.strays = new Set(strays);
    for (const key of strays) {
      if (!before.has(key) || this.claimed.has(key)) continue;
      void this.deps.lock
        .ifFree(key, (lease) => this.deps.ledger.unlistStray(key, lease))
        .then(
          (unlisted) =>
            unlisted && log.debug({ key }, "took a turn's key without a record off the pending list"),
        )
        .catch((err: unknown) => log.debug({ err, key }, "could not take a stray key off the pending list"));
    }
  }

  /**
   * Every replica arms a parked turn's expiry: the one that parked it may be gone, and a
   * question nobody answers must still end. The expiry is a first-wins decision, so
   * firing in two processes is harmless. A turn whose questions were all decided more
   * than `after` ms ago and that still waits is gone on with now: the process that took
   * the last click did not (it was stopping, or died, or the store failed it), and the
   * turn would otherwise wait for its expiry, up to `approvals.expireAfterMs`. `after`
   * leaves that process the time to go on with it itself; should both try, the one that
   * gets the thread's lock second finds the turn no longer waiting.
   */
  private async parked(record: TurnRecord, after: number): Promise<void> {
    const { desk } = this.deps;
    const waiting = record.waiting;
    if (!waiting) return;
    if (!desk.armed(record.key)) desk.arm(record.key, waiting.expiresAt);
    if (!this.adapterFor(record.key)) return;
    const decidedAt = await desk.decidedAt(waiting).catch((err: unknown) => {
      log.debug({ err, key: record.key }, "could not read a parked turn's decisions");
      return undefined;
    });
    if (decidedAt === undefined || Date.now() - decidedAt < after) return;
    log.info({ key: record.key }, "going on with a turn whose approvals were decided and not gone on with");
    desk.resume(record.key);
  }

  /** Takes an orphaned turn over, once per process; `done` when it is finished (undefined: not taken). */
  private async claim(record: TurnRecord): Promise<{ done: Promise<void> } | undefined> {
    const key = record.key;
    if (this.claimed.has(key)) return undefined;
    // A store that cannot say whether the owner beats leaves the turn for the next round;
    // thrown from the watch's timer, the failure would end the process.
    const nobodys = await this.orphaned(record).catch((err: unknown) => {
      log.debug({ err, key }, "could not tell whether a pending turn's process is alive");
      return false;
    });
    if (!nobodys) return undefined;
    const work = this.once(key, async (under) => {
      const now = await this.deps.ledger.get(key);
      // Read again under the lock: another process may have finished or taken it meanwhile.
      // One naming this process is nobody's now: this process runs the thread's turns one
      // at a time, and this is the one.
      const ours = now?.owner === this.deps.lock.owner;
      if (now && !now.waiting && (ours || (await this.orphaned(now)))) await this.finish(now, under);
    });
    return work && { done: work };
  }

  /** `work` under the thread's lock as one of this process's turns, unless one such is queued for the thread already. */
  private once(key: ThreadKey, work: (under: Under) => Promise<void>): Promise<void> | undefined {
    if (this.claimed.has(key)) return undefined;
    this.claimed.add(key);
    const free = () => this.claimed.delete(key);
    // Let go as the work ends under the lock, or as the wait for the lock fails: tried again next round.
    const done = this.deps.track(key, (under) => work(under).finally(free))?.finally(free);
    if (!done) free();
    return done;
  }

  /**
   * Nobody runs it: left by a process that no longer beats, or by this one with no turn of
   * the thread here, running or queued (it dropped the turn when its store fell silent, or
   * could not end the turn's record). This process writes a record only under the thread's
   * lock, queued for it from before the record is written: one just starting is counted.
   */
  private async orphaned(record: TurnRecord): Promise<boolean> {
    const { lock } = this.deps;
    if (record.owner === lock.owner) return lock.queued(record.key) === 0;
    return record.owner === undefined || !(await lock.alive(record.owner));
  }

  /** The running platform of `key`'s thread: where no event came from, replies are rebuilt with it. */
  adapterFor(key: ThreadKey): Adapter | undefined {
    return this.adapters.find((a) => a.platform === platformOf(key));
  }

  /** Goes on with the turn in its own reply; one that cannot go on ends with the note. */
  private async finish(record: TurnRecord, under: Under, fresh = false): Promise<void> {
    const adapter = this.adapterFor(record.key);
    // A platform that is not running here keeps its turns for a process that runs it.
    if (!adapter) return;
    // Every write of the record from here on, the first (`takeOver`, `end`) included.
    this.deps.ledger.guard(record, under.lease);
    if (record.took) await dropTaken(record, this.deps.ledger, this.deps.waiting);
    await this.finishTurn(record, adapter, under.controller, fresh);
    // Still there: the turn waits for approvals, or went to yet another process, with the
    // messages behind it. Otherwise its end handed them back (`TurnLedger.handQueued`),
    // and gave the record back to a reply cut off before it, if it carried one (`owed`).
    const after = await this.deps.ledger.get(record.key);
    const owed = after?.superseded && after.id !== record.id ? after : undefined;
    const left = owed ? undefined : after;
    // Its message still shows it taken (Slack's :eyes:), left for whoever answers: here,
    // unless it went on elsewhere again (that process takes it away).
    const mark = record.input?.mark;
    if (mark && (!left || left.waiting))
      void adapter
        .unmark?.(record.key, mark)
        .catch((err: unknown) => log.debug({ err }, "mark not taken away"));
    if (left) return;
    if (owed) return this.finish(owed, under);
    await this.answerHanded(record.key, under);
  }

  /**
   * Messages handed over in the thread (queued behind the turn just finished, and those
   * stopping processes handed over), oldest first, each a turn of its own record carrying
   * the rest: if this process stops in the middle, another one finds them all.
   */
  private async answerHanded(key: ThreadKey, under: Under): Promise<void> {
    // This process began to stop: the handed messages stay for the others.
    if (under.controller.signal.aborted) return;
    // Those a dead process kept while they waited for the thread join them first.
    const adopted = (await this.deps.waiting?.adopt(key, this.alive, under.lease)) ?? 0;
    if (adopted)
      log.info({ key, messages: adopted }, "answering messages that waited in a process that stopped");
    const successor = await recordHanded(this.deps.ledger, key, this.deps.lock.owner, under.lease);
    if (successor) await this.finish(successor, under, true);
  }

  /** Answers a thread's handed messages once its lock is free, after its unfinished turn if it has one. */
  private claimHanded(key: ThreadKey): void {
    this.once(key, async (under) => {
      const record = await this.deps.ledger.get(key);
      // A turn waiting for approvals keeps the thread; the watcher asks again later.
      if (record?.waiting) return;
      if (record) await this.finish(record, under);
      else await this.answerHanded(key, under);
    });
  }

  private async finishTurn(
    record: TurnRecord,
    adapter: Adapter,
    controller: AbortController,
    fresh: boolean,
  ): Promise<void> {
    const { ledger, lock } = this.deps;
    const resumable =
      !record.superseded &&
      record.input &&
      record.id &&
      (record.takeovers ?? 0) < MAX_TAKEOVERS &&
      (record.resumes ?? 0) < MAX_RESUMES;
    if (resumable && adapter.replyFor) {
      const from = record.owner;
      const reply = adapter.replyFor(record.key, {
        ...(record.address ?? { messages: [] }),
        retake: record.shown ?? "",
        ...(record.input ? { asker: record.input.user.id } : {}),
      });
      // A handed message's first run is where it is admitted: the process that took it did not.
      if (fresh && record.input && (await this.refused(record, record.input, reply))) return;
      await ledger.takeOver(record, lock.owner, fresh ? false : undefined);
      const what = fresh
        ? "answering a message handed over by a process that stopped"
        : from === lock.owner
          ? "going on with a turn this process had dropped"
          : "taking a turn over";
      log.info({ key: record.key, from, takeovers: record.takeovers }, what);
      const fileFrom = adapter.fileFrom?.bind(adapter);
      const attachments = (record.input?.files ?? []).flatMap((f) =>
        "unreadable" in f ? [unreadableFile(f.name, f.unreadable)] : fileFrom ? [fileFrom(f)] : [],
      );
      await this.deps.goOn(record, reply, controller, attachments);
      return;
    }
    await endWithNote(record, adapter, this.deps);
  }

  /** A handed message over its sender's or channel's daily budget: the sentence instead, and its record ends. */
  private async refused(record: TurnRecord, input: TurnInput, reply: Reply): Promise<boolean> {
    const platform = platformOf(record.key);
    if (!platform) return false;
    const payer = { platform, user: input.user.id, channel: input.channel, key: record.key };
    if (!(await this.deps.turnedAway(payer, reply))) return false;
    await this.deps.ledger.end(record);
    return true;
  }

  /**
   * Hands a message this stopping process will not answer to the others: the process that
   * finishes the thread's turn answers it next, or any replica's watcher within a round
   * (see `TurnLedger.hand`), its `claims` held as it is handed.
   */
  async handOff(inbound: Inbound, id?: string, claims?: Claims): Promise<boolean> {
    // Under the id it was kept with, if kept: a process adopting it too hands it once.
    await this.deps.ledger.hand(inbound.key, inputOf(inbound), id, claims);
    inbound.reply.leftToOthers?.();
    log.info({ key: inbound.key }, "handed a waiting message to the other replicas");
    return true;
  }
}
