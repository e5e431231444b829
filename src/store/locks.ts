import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { log } from "../log.js";
import { beats, forget, Heartbeat, type HeartbeatTimings, processes } from "./heartbeat.js";
import type { Store } from "./index.js";
import { createState, type Lease, leaseOwner, type StateStore } from "./state.js";
import { earlierWaiting, PlaceInLine } from "./thread-line.js";

/** What the holder of a thread's lock is given. */
export interface Held {
  /**
   * Aborted when the lock was lost while held: the process stalled past its heartbeat's
   * expiry, or its store stopped confirming its heartbeat, and another process may have
   * taken the thread over (or soon may). Its holder stops at once and writes nothing more.
   */
  lost: AbortSignal;
  /** The lease in the store (absent for a one-process lock): the fence of writes that must not outlive it. */
  lease?: Lease;
  /**
   * Whether the lock is still this holder's as far as this process can tell without asking
   * the store: not lost, and the store confirms the process's beats. Asked right before a
   * platform write, which no fence in the store covers: after the event loop was held up
   * past the heartbeat's silence, timers that fell due (an edit's pacing) would write before
   * the silence is said; asked, it is said now (`lost` aborts) and the answer is false.
   */
  current(): boolean;
}

/** Thrown by a write fenced by a lease that is no longer held (see `StateStore.setIfHolding`). */
export class LockLost extends Error {
  constructor(readonly key: string) {
    super(`The lock of ${key} was lost: another process has the thread now.`);
    this.name = "LockLost";
  }
}

/**
 * A message was taken over by another process while this one stalled past its heartbeat
 * (see `Dedupe.holding`): that one answers it, and this one writes nothing for it.
 */
export class ClaimLost extends LockLost {
  constructor(key: string) {
    super(key);
    this.message = `The message of ${key} was taken over by another process while this one stalled.`;
    this.name = "ClaimLost";
  }
}

/** Runs the turns of one thread one at a time, in arrival order; different threads run concurrently. */
export interface ThreadLock {
  /**
   * `sentAt`: when the turn's message was sent (see `Inbound.sentAt`). Among turns of the
   * thread waiting in different processes, the earliest sent goes first; turns without it
   * (takeovers, commands) take the lock when it is free. `waits`: called once the turn is
   * known to wait for another process (its lease is held there, or an earlier message
   * waits there), before it waits.
   */
  run<T>(key: string, fn: (held: Held) => Promise<T>, sentAt?: number, waits?: () => void): Promise<T>;
  /** Turns of this thread in this process that are running or waiting (0 when idle). */
  queued(key: string): number;
  /**
   * `fn` under the thread's lock only if the lock is free now: no turn of the thread here
   * and nobody holding its lease. For chores that must neither wait in the thread's line
   * nor look like one of its turns while they do (see `TurnLedger.unlistStray`); undefined
   * when not run.
   */
  ifFree<T>(key: string, fn: (lease: Lease | undefined) => Promise<T>): Promise<T | undefined>;
  /** This process, as its leases and turn records name it. */
  readonly owner: string;
  /** Whether the process named `owner` still beats (this one always does). */
  alive(owner: string): Promise<boolean>;
  /** The other processes that beat now: replicas sharing the store. */
  others(): Promise<string[]>;
  /** Stops beating at once, so that others take this process's threads over without waiting out its heartbeat. */
  close(): Promise<void>;
}

interface Queue {
  tail: Promise<void>;
  count: number;
}

/**
 * A promise chain per key. Each turn waits for the one before it, whether that one
 * succeeded or threw, so a failed turn never blocks the next and none is dropped.
 * The entry is deleted when its last turn ends: idle threads cost no memory.
 */
export class LocalThreadLock implements ThreadLock {
  private readonly queues = new Map<string, Queue>();
  readonly owner = randomUUID();

  /** Never aborted: one process alone cannot lose its own lock. */
  private readonly kept = new AbortController().signal;
  private readonly always = () => true;

  async run<T>(key: string, fn: (held: Held) => Promise<T>): Promise<T> {
    let queue = this.queues.get(key);
    if (!queue) {
      queue = { tail: Promise.resolve(), count: 0 };
      this.queues.set(key, queue);
    }
    const before = queue.tail;
    let release!: () => void;
    queue.tail = new Promise<void>((r) => {
      release = r;
    });
    queue.count++;
    try {
      await before;
      return await fn({ lost: this.kept, current: this.always });
    } finally {
      release();
      queue.count--;
      if (queue.count === 0 && this.queues.get(key) === queue) this.queues.delete(key);
    }
  }

  queued(key: string): number {
    return this.queues.get(key)?.count ?? 0;
  }

  async ifFree<T>(key: string, fn: (lease: Lease | undefined) => Promise<T>): Promise<T | undefined> {
    return this.queued(key) > 0 ? undefined : this.run(key, () => fn(undefined));
  }

  /** One process, no store: only this one exists. */
  async alive(owner: string): Promise<boolean> {
    return owner === this.owner;
  }

  async others(): Promise<string[]> {
    return [];
  }

  async close(): Promise<void> {}
}

export interface LeaseLockOptions {
  /** Lock expiry; a process that dies holding the lock blocks its thread at most this long. */
  ttlMs?: number;
  /** How often a running turn extends its lock; well under ttlMs. */
  renewEveryMs?: number;
  /** Longest pause between two attempts of a waiting turn. */
  maxPollMs?: number;
  /** The process's heartbeat (tests shorten it; see `HEARTBEAT`). */
  heartbeat?: HeartbeatTimings;
}

/**
 * The lock across processes and replicas, on any backend: a lease in the state store
 * (set-if-absent with expiry and a random token), extended while the turn runs, released
 * only by its holder. Turns of one process first queue locally, so arrival order holds
 * within a process and only one of them polls the store.
 */
export class LeaseThreadLock implements ThreadLock {
  private readonly local = new LocalThreadLock();
  /** Names this process in its lease tokens and its heartbeat. */
  readonly owner = randomUUID();
  private readonly beat: Heartbeat;
  /** The leases this process holds now, each with what aborts its holder when it is lost. */
  private readonly holding = new Map<Lease, AbortController>();
  private closed = false;
  private readonly ttlMs: number;
  private readonly renewEveryMs: number;
  private readonly maxPollMs: number;

  constructor(
    private readonly state: StateStore,
    options: LeaseLockOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 30_000;
    this.renewEveryMs = options.renewEveryMs ?? Math.floor(this.ttlMs / 3);
    this.maxPollMs = options.maxPollMs ?? 250;
    this.beat = new Heartbeat(
      state,
      this.owner,
      {
        // Its heartbeat may have expired meanwhile: every lease is checked now, not at its next renewal.
        stalled: () => this.checkHeld(),
        silent: (ms) => this.silenced(ms),
        heard: () => log.info("the store confirms this process's heartbeat again"),
      },
      options.heartbeat,
    );
  }

  run<T>(key: string, fn: (held: Held) => Promise<T>, sentAt?: number, waits?: () => void): Promise<T> {
    return this.local.run(key, () => this.hold(key, fn, sentAt, waits));
  }

  queued(key: string): number {
    return this.local.queued(key);
  }

  async ifFree<T>(key: string, fn: (lease: Lease | undefined) => Promise<T>): Promise<T | undefined> {
    if (this.closed || this.beat.silent || this.local.queued(key) > 0) return undefined;
    const lease = await this.state.acquireLock(key, this.ttlMs, this.owner);
    if (!lease) return undefined;
    try {
      return await fn(lease);
    } finally {
      await this.state.releaseLock(lease).catch(() => undefined);
    }
  }

  async alive(owner: string): Promise<boolean> {
    if (owner === this.owner) return !this.closed;
    return beats(this.state, owner);
  }

  async others(): Promise<string[]> {
    await this.beat.start();
    const { live, gone } = await processes(this.state);
    await forget(this.state, gone).catch(() => undefined);
    return live.filter((o) => o !== this.owner);
  }

  async close(): Promise<void> {
    this.closed = true;
    // Once its heartbeat is gone the others may take these threads at once: whatever of
    // this process still holds one (a write stuck behind a rate limit) must write no more.
    for (const [lease, lost] of this.holding) lost.abort(new LockLost(lease.key));
    await this.beat.stop();
  }

  private async hold<T>(
    key: string,
    fn: (held: Held) => Promise<T>,
    sentAt?: number,
    waits?: () => void,
  ): Promise<T> {
    const lease = await this.acquire(key, sentAt, waits);
    const lost = new AbortController();
    this.holding.set(lease, lost);
    // Taken just as the store fell silent (`acquire` waits while it is): its holder must
    // not start writing (see `silenced`).
    if (this.beat.silent) lost.abort(new LockLost(key));
    const timer = setInterval(() => void this.extend(lease), this.renewEveryMs);
    timer.unref();
    // The beat first: a silence it declares aborts `lost`.
    const current = () => this.beat.confirms() && !lost.signal.aborted;
    try {
      return await fn({ lost: lost.signal, lease, current });
    } finally {
      clearInterval(timer);
      this.holding.delete(lease);
      await this.state
        .releaseLock(lease)
        .catch((err: unknown) =>
          log.warn({ err, key }, "releasing thread lock failed; it expires by itself"),
        );
    }
  }

  private async acquire(key: string, sentAt?: number, waits?: () => void): Promise<Lease> {
    await this.beat.start();
    await this.whileSilent();
    // The usual case, nobody waiting in the thread's line: the lease is tried at once, and
    // the ticket (two more writes on every turn's way to its first word) only when it is
    // taken. The line is read while the lease is tried, not before (a round trip less); a
    // lease taken ahead of an earlier message waiting in another process is let go at once.
    if (sentAt !== undefined) {
      const [earlier, lease] = await Promise.all([
        this.earlierWaiting(key, sentAt),
        this.state.acquireLock(key, this.ttlMs, this.owner),
      ]);
      if (lease && !earlier) return lease;
      if (lease) {
        await this.state
          .releaseLock(lease)
          .catch((err: unknown) =>
            log.warn({ err, key }, "letting a thread lock go failed; it expires by itself"),
          );
      }
    }
    // This process's next turn of the thread waits in the thread's line with its send time.
    if (sentAt !== undefined) waits?.();
    const place =
      sentAt === undefined
        ? undefined
        : await PlaceInLine.join(this.state, key, sentAt, this.owner, this.renewEveryMs);
    try {
      let pause = 20;
      for (;;) {
        await this.whileSilent();
        if (sentAt === undefined || !(await this.earlierWaiting(key, sentAt))) {
          const lease = await this.state.acquireLock(key, this.ttlMs, this.owner);
          if (lease) return lease;
          if (await this.takeOverFromStopped(key)) continue;
        }
        // Jitter keeps processes waiting on the same thread from polling in step.
        await sleep(pause / 2 + Math.random() * pause);
        pause = Math.min(pause * 2, this.maxPollMs);
      }
    } finally {
      await place?.leave();
    }
  }

  /**
   * No lease is taken while the store does not confirm this process's beats: its holder
   * would be stopped at once. A turn waits for the next beat confirmed instead (a moment
   * when the store has just come back, the whole outage when it is gone).
   */
  private whileSilent(): Promise<void> {
    return this.beat.silent ? this.beat.answering() : Promise.resolve();
  }

  /** Another process waits with a message of the thread sent before `sent`. */
  private earlierWaiting(key: string, sent: number): Promise<boolean> {
    // A waiter refreshes its ticket every renewEveryMs: one a lease's life old waits no more.
    return earlierWaiting(this.state, key, sent, this.owner, (o) => this.alive(o), this.ttlMs);
  }

  /**
   * A lease whose process no longer beats (killed, or its machine gone) is released here
   * rather than waited out: after a crash the thread's next turn, or the restart's
   * recovery, starts within a heartbeat's expiry instead of the lease's. So is one of this
   * process that none of its turns holds, left by a release the store did not answer (it
   * was cut off): the thread's turns here run one at a time, and this one waits for it.
   */
  private async takeOverFromStopped(key: string): Promise<boolean> {
    const holder = await this.state.lockHolder(key);
    const owner = holder && leaseOwner(holder);
    if (!holder || !owner) return false;
    if (owner === this.owner) {
      if ([...this.holding.keys()].some((held) => held.token === holder.token)) return false;
      await this.state.releaseLock(holder);
      log.info({ key }, "released a thread lock this process had failed to release");
      return true;
    }
    if (await this.alive(owner)) return false;
    await this.state.releaseLock(holder);
    log.info({ key, owner }, "took over the thread lock of a process that stopped");
    return true;
  }

  /**
   * The store has not confirmed a heartbeat for `silentAfterMs` (`ms`): cut off from this
   * process, or down. Soon the others may count this process gone and take its threads
   * over, so every turn here stops writing now. Their records stay as they are (they could
   * not be written anyway), naming this process: whoever gets each thread next goes on
   * with its turn, another replica, or this one once the store answers again.
   */
  private silenced(ms: number): void {
    log.warn(
      { silentMs: Math.round(ms), turns: this.holding.size },
      "the store has not confirmed this process's heartbeat: stopping its answers before other replicas may take them over; they go on once the store answers",
    );
    for (const [lease, lost] of this.holding) lost.abort(new LockLost(lease.key));
  }

  /** After a stall: every lease held is renewed now, and the holders of those lost are stopped. */
  private checkHeld(): void {
    log.warn({ held: this.holding.size }, "this process stalled; checking that it still holds its threads");
    for (const lease of this.holding.keys()) void this.extend(lease);
  }

  private async extend(lease: Lease): Promise<void> {
    try {
      if (await this.state.extendLock(lease, this.ttlMs)) return;
      log.warn({ lock: lease.key }, "thread lock lost while its turn was running; stopping the turn");
      this.holding.get(lease)?.abort(new LockLost(lease.key));
    } catch (err) {
      log.warn({ err, lock: lease.key }, "extending thread lock failed");
    }
  }
}

export function createThreadLock(store: Store, options?: LeaseLockOptions): ThreadLock {
  return new LeaseThreadLock(createState(store), options);
}
