import { ContextSlot } from "../../core/async-context.js";
import { log } from "../../log.js";
import { RateLimitedError } from "../message-ops.js";
import { type BudgetBook, LocalBudgets, type WritePolicy } from "./budgets.js";
import { EditCadence } from "./edit-cadence.js";
import { SignalWatch } from "./signal-watch.js";
import { currentFence, WriteFenced } from "./write-fence.js";
import {
  type CallOptions,
  evaluated,
  LANES,
  type Lane,
  type WriteContext,
  WriteDropped,
  type WritePlan,
} from "./write-plan.js";
import { inWriteSpan, nameAfterCall, type SpannedWrite } from "./write-span.js";

export type { BucketLimit, BudgetBook, WritePolicy } from "./budgets.js";
export type { CallOptions, Lane, WriteContext, WritePlan } from "./write-plan.js";
export { WriteDropped } from "./write-plan.js";

/** Why a write that must start at once did not. */
const NO_ROOM = "the platform's budget for it is spent right now";

/**
 * Share of a bucket each lane leaves to the lanes above it. Updates leave 40 %: on
 * Discord's 5 writes per 5 s per channel, 2 of them, so a thread's next answer (posted the
 * moment the last one ends) never waits for the edits of the one before.
 */
const RESERVE: Record<Lane, number> = { first: 0, final: 0, update: 0.4, background: 0.5 };
/** Writes waiting from which picks are made once per turn of the event loop (see `kick`). */
const BATCH_PICKS_FROM = 16;
/** Lanes whose writes no other lane's write goes before: the first visible write and final text. */
const TOP_LANES: ReadonlySet<Lane> = new Set(["first", "final"]);
/** 429s in a row on one write before it is given up. */
const MAX_LIMITED = 8;

interface Waiting extends SpannedWrite {
  plan: WritePlan<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
  submitted: number;
  seq: number;
  /** When it was last granted; -1 while waiting, or once that grant was refunded. */
  grantedAt: number;
  /** Its caller's lock (see write-fence.ts), asked as it is granted. */
  fence: (() => boolean) | undefined;
}

export interface SchedulerStats {
  granted: Record<Lane, number>;
  dropped: number;
  limited: number;
}

/**
 * One per platform connection (a Slack workspace, a Discord bot): every write of every
 * thread goes through it. It runs the most urgent write whose budgets have room, the
 * stalest thread first within a lane; a 429 pauses only the bucket it concerns, for its
 * Retry-After, and the write goes back in line. A write's `run` is called only when it
 * is granted, so a writer that waited writes its latest text then (coalescing for free).
 */
export class WriteScheduler {
  private readonly budgets: BudgetBook;
  private readonly waiting = new Set<Waiting>();
  /** The writes waiting with each caller's signal: cancelled when it aborts before they start. */
  private readonly signals = new SignalWatch<Waiting>((w) => {
    if (this.waiting.delete(w)) w.reject(new WriteDropped(w.plan.what ?? "write", "cancelled"));
  });
  private readonly context = new ContextSlot<WriteContext>("write");
  private pumpQueued = false;
  /**
   * Buckets a waiting first or final write wants (as of the last pick, plus those asked
   * for since): another such write on none of them need not wait for a pick (see `atOnce`).
   */
  private readonly contested = new Set<string>();
  /** How often the connection's streaming replies edit: more seldom under a crowd. */
  readonly cadence = new EditCadence();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private timerAt = Number.POSITIVE_INFINITY;
  private seq = 0;
  readonly stats: SchedulerStats = {
    granted: { first: 0, final: 0, update: 0, background: 0 },
    dropped: 0,
    limited: 0,
  };

  /** `policy`: the platform's limits, kept in this process; or a `BudgetBook` shared with others. */
  constructor(
    policy: WritePolicy | BudgetBook,
    private readonly name = "writes",
  ) {
    this.budgets = "limitOf" in policy ? new LocalBudgets(policy) : policy;
  }

  /**
   * Resolves with the write's result once it ran; see `WritePlan`. Each write is a span
   * under its caller's (a turn's), from when it was asked for to when it was written,
   * with its wait and the 429s it met.
   */
  run<T>(plan: WritePlan<T>): Promise<T> {
    return inWriteSpan(this.name, plan.what ?? "write", (queued) => this.enqueue(plan, queued));
  }

  private enqueue<T>(plan: WritePlan<T>, queued: (w: SpannedWrite) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (plan.signal?.aborted) {
        reject(new WriteDropped(plan.what ?? "write", "cancelled"));
        return;
      }
      // Known without a turn in line, where it would only be dropped at the next pick: under
      // a crowd that pick is a busy event loop's turn or two before the caller's way out.
      if (plan.now && this.waitFor(evaluated(plan.buckets), evaluated(plan.lane)) > 0) {
        reject(new WriteDropped(plan.what ?? "write", NO_ROOM));
        return;
      }
      const signal = plan.signal;
      const w: Waiting = {
        plan: plan as WritePlan<unknown>,
        resolve: (v: unknown) => {
          if (signal) this.signals.delete(signal, w);
          resolve(v as T);
        },
        reject: (err: unknown) => {
          if (signal) this.signals.delete(signal, w);
          reject(err);
        },
        submitted: Date.now(),
        limited: 0,
        seq: this.seq++,
        grantedAt: -1,
        fence: currentFence(),
      };
      queued(w);
      this.waiting.add(w);
      if (signal) this.signals.add(signal, w);
      const top = TOP_LANES.has(evaluated(plan.lane));
      if (top && this.waiting.size >= BATCH_PICKS_FROM) queueMicrotask(() => this.atOnce(w));
      else {
        if (top) this.contest(this.bucketsOf(w));
        this.kick();
      }
    });
  }

  /**
   * Runs `fn` with its platform calls placed in `lane` (calls that reach the platform
   * client look it up with `callContext`). Inside a granted write, calls pass straight through.
   * A lane given as a function is asked at every pick, as a plan's: a call waiting as an
   * update goes as final text once its answer has ended.
   */
  as<T>(lane: Lane | (() => Lane), fn: () => Promise<T>, opts: CallOptions = {}): Promise<T> {
    if (this.context.get()?.granted) return fn();
    return this.context.run({ granted: false, lane, ...opts }, fn);
  }

  /** The lane a platform client's call was placed in, and whether it runs inside a granted write. */
  callContext(): WriteContext | undefined {
    return this.context.get();
  }

  /** A platform client's call that passes straight through the granted write it runs in (`ctx` from `callContext`). */
  passedThrough(ctx: WriteContext, method: string): void {
    nameAfterCall(ctx, this.name, method);
  }

  /** How long a write in `lane` on `buckets` would wait at `now`, in ms (0: it could start). */
  waitFor(buckets: readonly string[], lane: Lane, now = Date.now()): number {
    let wait = 0;
    for (const key of buckets) wait = Math.max(wait, this.budgets.wait(key, RESERVE[lane], now));
    return wait;
  }

  /**
   * The platform said a bucket is spent (Discord's `X-RateLimit-Remaining: 0`): nobody
   * writes on it for `ms`.
   */
  pause(bucket: string, ms: number): void {
    this.budgets.pause(bucket, ms, Date.now());
    this.kick();
  }

  /** Writes waiting, by lane (for metrics and tests). */
  backlog(): Record<Lane, number> {
    const out: Record<Lane, number> = { first: 0, final: 0, update: 0, background: 0 };
    for (const w of this.waiting) out[this.laneOf(w)] += 1;
    return out;
  }

  /**
   * A first or final write while a crowd's picks wait for the event loop's next turn: it
   * goes at once when its budgets have room and no other first or final write wants any of
   * them, which is what that pick would do (nothing ranks above it there), a busy turn of
   * the loop sooner. Else it waits for the pick like any write.
   */
  private atOnce(w: Waiting): void {
    if (!this.waiting.has(w)) return;
    const lane = this.laneOf(w);
    const buckets = this.bucketsOf(w);
    const now = Date.now();
    if (
      TOP_LANES.has(lane) &&
      !buckets.some((key) => this.contested.has(key)) &&
      this.waitFor(buckets, lane, now) <= 0
    ) {
      this.grant(w, lane, buckets, now);
      return;
    }
    if (TOP_LANES.has(lane)) this.contest(buckets);
    this.kick();
  }

  private contest(buckets: readonly string[]): void {
    for (const key of buckets) this.contested.add(key);
  }

  private laneOf(w: Waiting): Lane {
    return evaluated(w.plan.lane);
  }

  private bucketsOf(w: Waiting): readonly string[] {
    return evaluated(w.plan.buckets);
  }

  private kick(): void {
    if (this.pumpQueued) return;
    this.pumpQueued = true;
    const pick = () => {
      this.pumpQueued = false;
      this.pump();
    };
    // A pick weighs every waiting write. With a few waiting it is cheap and made at once;
    // with many (200 threads at once) it is made once per turn of the event loop, after
    // its I/O, for all the writes that ended and were asked for in it: picking after each
    // one cost ~0.4 s of a 200-thread crowd's main thread, every waiting write weighed at
    // every answer from the platform.
    if (this.waiting.size < BATCH_PICKS_FROM) queueMicrotask(pick);
    else setImmediate(pick);
  }

  private pump(): void {
    const now = Date.now();
    let next = Number.POSITIVE_INFINITY;
    this.contested.clear();
    const byLane = new Map<Lane, Array<{ w: Waiting; since: number }>>();
    for (const w of this.waiting) {
      const lane = this.laneOf(w);
      const list = byLane.get(lane) ?? [];
      list.push({ w, since: w.plan.since?.() ?? w.submitted });
      byLane.set(lane, list);
    }
    for (const lane of LANES) {
      const list = byLane.get(lane);
      if (!list) continue;
      list.sort((a, b) => a.since - b.since || a.w.seq - b.w.seq);
      // Many writes share a bucket (a workspace's, the bot's): its wait is asked once per
      // pick until a grant spends from it. Wide buckets are last in a write's list and are
      // the ones most often spent, so they are asked first; the first wait found is enough.
      const waits = new Map<string, number>();
      for (const { w } of list) {
        const buckets = this.bucketsOf(w);
        let wait = 0;
        for (let i = buckets.length - 1; i >= 0 && wait <= 0; i--) {
          const key = buckets[i]!;
          let known = waits.get(key);
          if (known === undefined) {
            known = this.budgets.wait(key, RESERVE[lane], now);
            waits.set(key, known);
          }
          wait = known;
        }
        if (wait <= 0) {
          this.grant(w, lane, buckets, now);
          for (const key of buckets) waits.delete(key);
          continue;
        }
        const { plan } = w;
        if (plan.now) {
          this.drop(w, NO_ROOM);
          continue;
        }
        if (plan.dropAfterMs !== undefined) {
          const deadline = w.submitted + plan.dropAfterMs;
          if (deadline <= now) {
            this.drop(w, "answers needed the platform's budget");
            continue;
          }
          next = Math.min(next, deadline - now);
        }
        next = Math.min(next, wait);
        if (TOP_LANES.has(lane)) this.contest(buckets);
      }
    }
    this.schedule(next);
  }

  private schedule(inMs: number): void {
    if (!Number.isFinite(inMs) || this.waiting.size === 0) return;
    const at = Date.now() + Math.max(1, Math.ceil(inMs));
    if (this.timer && this.timerAt <= at) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.timerAt = Number.POSITIVE_INFINITY;
      this.pump();
    }, at - Date.now());
    this.timer.unref?.();
  }

  private drop(w: Waiting, why: string): void {
    this.waiting.delete(w);
    this.stats.dropped += 1;
    w.reject(new WriteDropped(w.plan.what ?? "write", why));
  }

  private grant(w: Waiting, lane: Lane, buckets: readonly string[], now: number): void {
    this.waiting.delete(w);
    // Asked last thing before the call, also for a write granted long after it was asked for
    // (it waited for its budget, or a timer of its writer fell due while the loop was held up).
    if (w.fence?.() === false) {
      this.stats.dropped += 1;
      w.reject(new WriteFenced(w.plan.what ?? "write"));
      return;
    }
    this.budgets.spend(buckets, now);
    w.grantedAt = now;
    this.stats.granted[lane] += 1;
    w.onGrant?.();
    const refused = () => {
      // Counted as the write's 429 (its span shows it), though its client is the one that waits.
      w.limited += 1;
      if (w.grantedAt === now) this.refund(w, buckets);
    };
    const granted: WriteContext = w.span
      ? { granted: true, span: w.span, calls: [], refused }
      : { granted: true, refused };
    const done = this.context.run(granted, () => {
      try {
        return Promise.resolve(w.plan.run());
      } catch (err) {
        return Promise.reject(err);
      }
    });
    done.then(
      (value) => {
        w.resolve(value);
        this.kick();
      },
      (err: unknown) => {
        if (err instanceof RateLimitedError) this.limited(w, buckets, err);
        else w.reject(err);
        this.kick();
      },
    );
  }

  /** A 429 refused the write's grant: the platform did not count it, so neither do its buckets. */
  private refund(w: Waiting, buckets: readonly string[]): void {
    if (w.grantedAt < 0) return;
    this.budgets.refund(buckets, w.grantedAt);
    w.grantedAt = -1;
  }

  /** A 429: pause the bucket it concerns; the write goes back in line (or to its caller). */
  private limited(w: Waiting, buckets: readonly string[], err: RateLimitedError): void {
    this.stats.limited += 1;
    this.refund(w, buckets);
    const now = Date.now();
    const narrow = err.bucket ?? buckets[0];
    if (narrow !== undefined) {
      this.budgets.pause(narrow, err.retryAfterMs, now);
      if (err.bucket === undefined) {
        for (const wide of buckets.slice(1)) {
          if (this.budgets.limitedWithin(wide, narrow, now)) this.budgets.pause(wide, err.retryAfterMs, now);
        }
      }
    }
    log.debug(
      { scheduler: this.name, what: w.plan.what, bucket: narrow, retryAfterMs: err.retryAfterMs },
      "write rate limited; its bucket is paused",
    );
    w.limited += 1;
    // Aborted while it ran: its signal's watch has let it go, so back in line it would be granted.
    if (w.plan.signal?.aborted) {
      w.reject(new WriteDropped(w.plan.what ?? "write", "cancelled"));
      return;
    }
    if (w.plan.requeue === false || w.limited >= MAX_LIMITED) {
      w.reject(err);
      return;
    }
    w.submitted = Math.min(w.submitted, now);
    this.waiting.add(w);
  }
}
