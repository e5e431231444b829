import type { Span } from "@opentelemetry/api";

/*
 * What a write asks of the scheduler (its lane, its budgets, how long it may wait) and
 * the error it gets when the scheduler gives up on it.
 */

/**
 * Which writes go first when a platform's budget is short. A thread's first visible write
 * and an answer's final text before anything else; then intermediate edits and statuses;
 * typing, renames and acknowledgements last (and droppable).
 */
export type Lane = "first" | "final" | "update" | "background";
export const LANES: readonly Lane[] = ["first", "final", "update", "background"];

/** One write, run when its lane and budgets allow it. */
export interface WritePlan<T> {
  /** Evaluated at every pick: a write waiting as an update becomes final when the answer ends. */
  lane: Lane | (() => Lane);
  /**
   * The budgets the write draws on, narrowest first (Slack: the method in this channel,
   * then the method in the workspace). A 429 pauses the narrowest, and a wider one once
   * two of its narrower buckets met a 429. Evaluated at pick time, like `lane`.
   */
  buckets: readonly string[] | (() => readonly string[]);
  /** Within a lane the stalest thread goes first: when this one last wrote (default: when submitted). */
  since?: () => number;
  /** Given up (rejected with `WriteDropped`) when not started within this long. */
  dropAfterMs?: number;
  /** Rejected with `WriteDropped` unless it can start at once (a caller with a cheaper way out). */
  now?: boolean;
  /** Rejected with `WriteDropped` when aborted before it started. */
  signal?: AbortSignal;
  /**
   * A 429 puts the write back in line (true, the default: a 429 wrote nothing), or rejects
   * with the `RateLimitedError` so the caller can choose another way (the budget is paused either way).
   */
  requeue?: boolean;
  /** For logs. */
  what?: string;
  run(): Promise<T>;
}

/** A plan's lane or buckets, which it may give as a function evaluated at each pick. */
export function evaluated<T>(x: T | (() => T)): T {
  return typeof x === "function" ? (x as () => T)() : x;
}

/**
 * A write the scheduler gave up on before it started: nothing was written. It is how a
 * late or cancelled write ends, not a fault, so it is made without a stack: capturing one
 * (through every async frame) made its constructor 0.28 % of the bot's main-thread time in
 * the tracing benchmark's profiles, nearly all of it for writes given up after waiting
 * past their `dropAfterMs`. Its message says which write and why.
 */
export class WriteDropped extends Error {
  constructor(what: string, why: string) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(`${what} not written: ${why}`);
    } finally {
      Error.stackTraceLimit = limit;
    }
    this.name = "WriteDropped";
  }
}

/** How a platform call made outside a granted write is to be scheduled (see `WriteScheduler.as`). */
export type CallOptions = Pick<WritePlan<unknown>, "dropAfterMs" | "now" | "signal" | "requeue" | "since">;

/** Calls made inside a granted write pass straight through; others say which lane they belong to. */
export interface WriteContext extends CallOptions {
  granted: boolean;
  /** Passed on to the plan as it is: a function is evaluated at every pick (see `WritePlan.lane`). */
  lane?: WritePlan<unknown>["lane"];
  /** A granted write's span (when traced), named after the platform calls made in it. */
  span?: Span;
  /** The platform calls made in a granted write so far. */
  calls?: string[];
  /**
   * A granted write's call was refused with a 429 that its client waits out and asks
   * again by itself (discord.js, for a global limit): the grant leaves its buckets'
   * windows, as a write that fails with a RateLimitedError does.
   */
  refused?: () => void;
}
