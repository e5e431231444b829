import type { ModelEvent, Provider } from "./provider.js";

/**
 * The provider, its stream read as it arrives and handed on in batches: what came while
 * the consumer was busy is handed on at once, adjacent text deltas joined into one. A busy
 * process finds several chunks of each answer waiting whenever it gets to it, and every
 * layer above the provider (metering, tracing, the agent's loop, the reply's renderer)
 * then runs once per batch instead of once per chunk. A consumer that keeps up sees each
 * chunk as it came.
 */
export function coalescing(provider: Provider): Provider {
  return {
    name: provider.name,
    listModels: (signal) => provider.listModels(signal),
    stream: (req, signal) => coalesce(provider.stream(req, signal)),
  };
}

export async function* coalesce(source: AsyncIterable<ModelEvent>): AsyncGenerator<ModelEvent> {
  const iterator = source[Symbol.asyncIterator]();
  const arrived: ModelEvent[] = [];
  let ended = false;
  let failure: { error: unknown } | undefined;
  let stopped = false;
  let wake: (() => void) | undefined;
  let waking = false;
  // The consumer resumes after the chunks read in this turn of the event loop, not after
  // each one: a network read holding several chunks becomes one batch.
  const nudge = () => {
    if (waking || !wake) return;
    waking = true;
    setImmediate(() => {
      waking = false;
      wake?.();
    });
  };
  void (async () => {
    try {
      while (!stopped) {
        const next = await iterator.next();
        if (next.done) break;
        arrived.push(next.value);
        nudge();
      }
    } catch (error) {
      failure = { error };
    } finally {
      ended = true;
      nudge();
    }
  })();
  try {
    for (;;) {
      if (arrived.length === 0) {
        // What was read before a failure is handed on first; the failure comes after it.
        if (ended) {
          if (failure) throw failure.error;
          return;
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
        continue;
      }
      for (const event of joined(arrived.splice(0))) yield event;
    }
  } finally {
    // A consumer that stopped early: the source stops at its next chunk (not waited for,
    // as a stalled stream would hold the consumer; its signal is what aborts it at once).
    if (!ended) {
      stopped = true;
      void (async () => iterator.return?.())().catch(() => undefined);
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
