import type { ModelEvent } from "./provider.js";

/*
 * A model's stream read as it arrives and handed on in batches: what came while the
 * consumer was busy is handed on at once, adjacent text deltas joined into one. A busy
 * process finds several chunks of each answer waiting whenever it gets to it, and every
 * layer above the provider (metering, tracing, the agent's loop, the reply's renderer)
 * then runs once per batch instead of once per chunk. A consumer that keeps up sees each
 * chunk as it came. The first event and the end are handed on at once: under load a turn
 * of the event loop lasts 100 ms and more, and they are the answer's first visible words
 * and its final text.
 */

/** Where a producer puts each event as it reads it; `stopped` says the consumer went away. */
export interface EventSink {
  emit(event: ModelEvent): void;
  stopped(): boolean;
}

/**
 * The stream of a producer that pushes its events (the providers: each SDK chunk becomes
 * events in a plain loop, with no generator between the SDK and this buffer, which under
 * two hundred answers at once is a few promises fewer per chunk).
 */
export function pushed(produce: (sink: EventSink) => Promise<void>): AsyncGenerator<ModelEvent> {
  const arrivals = new Arrivals();
  produce({ emit: (e) => arrivals.push(e), stopped: () => arrivals.stopped }).then(
    () => arrivals.end(),
    (error: unknown) => arrivals.end({ error }),
  );
  return arrivals.drain(() => undefined);
}

/** An iterable source handed on in batches, as `pushed` hands on a pushing one. */
export function coalesce(source: AsyncIterable<ModelEvent>): AsyncGenerator<ModelEvent> {
  const arrivals = new Arrivals();
  const iterator = source[Symbol.asyncIterator]();
  void (async () => {
    try {
      while (!arrivals.stopped) {
        const next = await iterator.next();
        if (next.done) break;
        arrivals.push(next.value);
      }
      arrivals.end();
    } catch (error) {
      arrivals.end({ error });
    }
  })();
  // A consumer that stopped early: the source is told at once (not waited for, as a
  // stalled stream would hold the consumer; its signal is what aborts it at once).
  return arrivals.drain(() => void (async () => iterator.return?.())().catch(() => undefined));
}

/**
 * Streams read at once in this process beyond which the words between the first and the
 * end are handed on at most every CROWD_HANDOFF_MS: each handing-on runs every layer above
 * (the agent's loop and its generators, the renderer, the meter), about a dozen promises
 * and their work, and with two hundred answers at once a chunk a word made that a large
 * part of the process's work. A reply's writes are a second or more apart under a crowd,
 * so words handed on a tenth of a second later show no later; the first words and the end
 * still go at once. Alone or with a few others, a stream is handed on chunk by chunk.
 */
export const CROWD_STREAMS = 8;
export const CROWD_HANDOFF_MS = 100;
let streaming = 0;

/** Events read and not yet handed on, and the consumer waiting for them. */
class Arrivals {
  private events: ModelEvent[] = [];
  private ended = false;
  private failure: { error: unknown } | undefined;
  private wake: (() => void) | undefined;
  private waking = false;
  /** Something was handed on: later arrivals wait for the end of this turn of the event loop. */
  private started = false;
  /** The consumer stopped before the stream ended. */
  stopped = false;
  /** When the last batch was handed on (performance.now()). */
  private handedAt = 0;
  /** Counted among the streams being read until it ends or its consumer stops. */
  private counted = true;

  constructor() {
    streaming += 1;
  }

  private uncount(): void {
    if (!this.counted) return;
    this.counted = false;
    streaming -= 1;
  }

  push(event: ModelEvent): void {
    this.events.push(event);
    this.nudge(!this.started);
  }

  end(failure?: { error: unknown }): void {
    this.ended = true;
    this.uncount();
    this.failure = failure;
    this.nudge(true);
  }

  /**
   * The consumer resumes after the chunks read in this turn of the event loop, not after
   * each one: a network read holding several chunks becomes one batch. `now`: once the
   * code that pushed has run (what one chunk brings comes as one batch still).
   */
  private nudge(now: boolean): void {
    if (now && this.wake) {
      // A wake still pending from this turn finds the consumer waiting again, or busy: harmless.
      this.wake();
      return;
    }
    if (this.waking || !this.wake) return;
    this.waking = true;
    const wake = () => {
      this.waking = false;
      this.wake?.();
    };
    const wait = streaming > CROWD_STREAMS ? this.handedAt + CROWD_HANDOFF_MS - performance.now() : 0;
    if (wait > 0) setTimeout(wake, wait);
    else setImmediate(wake);
  }

  async *drain(onStop: () => void): AsyncGenerator<ModelEvent> {
    try {
      for (;;) {
        if (this.events.length === 0) {
          // What was read before a failure is handed on first; the failure comes after it.
          if (this.ended) {
            if (this.failure) throw this.failure.error;
            return;
          }
          await new Promise<void>((resolve) => {
            this.wake = resolve;
          });
          this.wake = undefined;
          continue;
        }
        const batch = this.events;
        this.events = [];
        this.started = true;
        this.handedAt = performance.now();
        for (const event of joined(batch)) yield event;
      }
    } finally {
      this.uncount();
      if (!this.ended) {
        this.stopped = true;
        onStop();
      }
    }
  }
}

/** The events with each run of text deltas joined into one. */
function joined(events: ModelEvent[]): ModelEvent[] {
  const out: ModelEvent[] = [];
  for (const event of events) {
    const last = out.at(-1);
    if (event.type === "text" && last?.type === "text")
      out[out.length - 1] = { type: "text", delta: last.delta + event.delta };
    else out.push(event);
  }
  return out;
}
