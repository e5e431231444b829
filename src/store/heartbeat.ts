import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { log } from "../log.js";
import type { Store } from "./index.js";
import { createState, type StateStore } from "./state.js";

/** A process's beat in the store: how often, how long each one counts, and when no answer is silence. */
export interface HeartbeatTimings {
  everyMs: number;
  /**
   * How long a process counts as alive after its last beat. A live process whose event
   * loop stalls for longer, or whose store stops answering it, can lose its threads to
   * another process; a dead one holds its threads for at most this long.
   */
  ttlMs: number;
  /**
   * How long without a beat the store confirmed before the process stops writing its
   * answers: it must stop before the others may count it gone (`ttlMs`) and take them over.
   */
  silentAfterMs: number;
}

const HEARTBEAT_TTL_MS = 4_000;

/** How long a stopping process waits for the store to take its beat out (see `stop`). */
const STOP_WITHIN_MS = 1_000;

/**
 * A beat is dated when it was sent, and the store wrote it no earlier, so the process lives
 * at least `ttlMs` from then in every replica's eyes, give or take their clocks. A second
 * short of that covers what still comes between the deadline and another replica's first
 * write: on PostgreSQL an expiry is read by the reader's own clock, and replicas may be
 * half a second apart before the start warning and doctor complain; this deadline is a
 * timer, late when the event loop is busy; a platform write already on its way when the
 * turns stop still lands. Sooner would stop the answers of a replica whose store is merely
 * slow: two beats in a row may go unanswered.
 */
const SILENT_AFTER_MS = HEARTBEAT_TTL_MS - 1_000;

export const HEARTBEAT: HeartbeatTimings = {
  everyMs: 1_000,
  ttlMs: HEARTBEAT_TTL_MS,
  silentAfterMs: SILENT_AFTER_MS,
};

/** What a process learns from its own heartbeat. */
export interface HeartbeatWatch {
  /**
   * A gap between two beats of half a beat's life: the process stalled (a long GC pause, a
   * starved CPU, SIGSTOP), and its beat may have expired meanwhile.
   */
  stalled(): void;
  /** No beat confirmed for `silentAfterMs` (`ms`, in fact): told once, until one is. */
  silent(ms: number): void;
  /** A beat confirmed again after `silent`. */
  heard(): void;
}

const aliveKey = (owner: string) => `alive:${owner}`;
/** Every process that beat once; `processes` reads the live ones from it. */
const PROCESSES = "processes";

/**
 * This process's sign of life in the store, renewed every `everyMs` while it runs, and
 * what the process learns from it: that it stalled, and that the store stopped confirming
 * its beats (cut off from it, or down) while it may still reach the platforms.
 */
export class Heartbeat {
  private starting: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private silenceTimer: NodeJS.Timeout | undefined;
  private lastTick = 0;
  /** When the newest beat the store confirmed was sent (`performance.now()`, which no clock change moves). */
  private confirmedAt = 0;
  private quiet = false;
  /** Resolved by the first beat confirmed after a silence. */
  private back: { promise: Promise<void>; resolve: () => void } | undefined;
  private stopped = false;

  constructor(
    private readonly state: StateStore,
    private readonly owner: string,
    private readonly watch: HeartbeatWatch,
    private readonly timings: HeartbeatTimings = HEARTBEAT,
  ) {
    const { everyMs, ttlMs, silentAfterMs } = timings;
    if (!(everyMs < silentAfterMs && silentAfterMs < ttlMs))
      throw new Error(
        `A heartbeat needs everyMs < silentAfterMs < ttlMs (got ${everyMs}, ${silentAfterMs}, ${ttlMs})`,
      );
  }

  /**
   * The first beat, written before any lease or turn record names this process, then one
   * every `everyMs`. A first beat the store refused (a failover, a busy SQLite) is tried
   * again at the next call: kept, it failed every turn of the process until a restart.
   */
  start(): Promise<void> {
    this.starting ??= (async () => {
      const sent = performance.now();
      await this.beat();
      await this.state.listAdd(PROCESSES, this.owner);
      if (this.stopped) return;
      this.lastTick = performance.now();
      this.confirmed(sent);
      this.timer = setInterval(() => this.tick(), this.timings.everyMs);
      this.timer.unref();
    })();
    this.starting.catch(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  /** No beat confirmed for `silentAfterMs`, also when the event loop has not yet run the timer that says so. */
  get silent(): boolean {
    if (this.quiet) return true;
    if (this.stopped || this.timer === undefined) return false;
    return performance.now() - this.confirmedAt > this.timings.silentAfterMs;
  }

  /** Resolves at once while the store confirms the beats; after a silence, once it confirms one again. */
  answering(): Promise<void> {
    this.declareDue();
    return this.back?.promise ?? Promise.resolve();
  }

  /**
   * Whether the store confirms the beats, asked right before a write that must not land
   * once others may have taken this process's threads: a silence that is due is declared
   * now (its holders stop), not when the event loop gets to its timer.
   */
  confirms(): boolean {
    this.declareDue();
    return !this.silent;
  }

  /**
   * A silence due whose timer has not run yet (the event loop was held up: a long GC
   * pause, a starved CPU): silent from now, as that timer would say. Timers that fell due
   * meanwhile may run first, a beat's among them, whose answer re-arms the silence timer
   * before it ever runs: the stall would go unsaid while others may count this process gone.
   */
  private declareDue(): void {
    if (!this.quiet && this.silent) this.fellSilent();
  }

  /** Stops beating and takes the beat out of the store, so that the others know at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.silenceTimer);
    this.back?.resolve();
    if (!this.starting) return;
    const removed = (async () => {
      await this.state.delete(aliveKey(this.owner)).catch(() => undefined);
      await this.state.listRemove(PROCESSES, this.owner).catch(() => undefined);
    })();
    // A store that does not answer (cut off, failing over) would hold the stop for the whole
    // outage; the beat it keeps expires by itself within `ttlMs`, and the others forget it.
    await Promise.race([removed, sleep(STOP_WITHIN_MS, undefined, { ref: false })]);
  }

  private beat(): Promise<void> {
    return this.state.set(aliveKey(this.owner), 1, this.timings.ttlMs);
  }

  private tick(): void {
    if (this.stopped) return;
    this.declareDue();
    const now = performance.now();
    const stalled = now - this.lastTick > this.timings.ttlMs / 2;
    this.lastTick = now;
    if (stalled) this.watch.stalled();
    void this.beat().then(
      () => this.confirmed(now),
      (err: unknown) => log.debug({ err }, "heartbeat not written"),
    );
  }

  /** The beat sent at `sent` is in the store: silence is due `silentAfterMs` after it. */
  private confirmed(sent: number): void {
    if (this.stopped || sent <= this.confirmedAt) return;
    this.confirmedAt = sent;
    const left = sent + this.timings.silentAfterMs - performance.now();
    clearTimeout(this.silenceTimer);
    this.silenceTimer = setTimeout(() => this.fellSilent(), Math.max(0, left));
    this.silenceTimer.unref();
    // Answered too late to vouch for the process: the silence stands.
    if (left <= 0 || !this.quiet) return;
    this.quiet = false;
    this.back?.resolve();
    this.back = undefined;
    this.watch.heard();
  }

  private fellSilent(): void {
    if (this.stopped || this.quiet) return;
    this.quiet = true;
    let resolve!: () => void;
    const promise = new Promise<void>((r) => {
      resolve = r;
    });
    this.back = { promise, resolve };
    this.watch.silent(performance.now() - this.confirmedAt);
  }
}

/** Whether the process named `owner` beats now. */
export async function beats(state: StateStore, owner: string): Promise<boolean> {
  return (await state.get(aliveKey(owner))) !== undefined;
}

/** The processes that ever beat in this store, split by whether they beat now. */
export async function processes(state: StateStore): Promise<{ live: string[]; gone: string[] }> {
  const all = await state.listMembers(PROCESSES);
  const beating = await Promise.all(all.map((owner) => beats(state, owner)));
  return {
    live: all.filter((_, i) => beating[i]),
    gone: all.filter((_, i) => !beating[i]),
  };
}

/** Forgets processes that are gone: the list stays as long as the replicas running now. */
export async function forget(state: StateStore, gone: string[]): Promise<void> {
  await Promise.all(gone.map((o) => state.listRemove(PROCESSES, o)));
}

/** How many bot processes beat in this store now; read only: the caller does not join them. */
export async function liveProcesses(store: Store): Promise<number> {
  return (await processes(createState(store))).live.length;
}
