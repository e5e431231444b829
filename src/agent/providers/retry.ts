import { log } from "../../log.js";
import { type EventSink, pushed } from "./coalesce.js";
import { abortedError, brokeOffError, unavailableError } from "./errors.js";
import type { ModelEvent, ProviderName } from "./provider.js";

/**
 * Thrown by a provider when a stream's body fails or ends early after the HTTP response
 * began. The SDKs retry failed requests themselves (`maxRetries`, honouring `retry-after`
 * and `retry-after-ms`), but never a response whose body broke; this marks the case
 * `streamWithRetry` may repeat, and only while nothing has reached the caller.
 */
export class StreamInterrupted extends Error {
  constructor(reason: string, options: { cause?: unknown } = {}) {
    super(reason, options);
    this.name = "StreamInterrupted";
  }
}

export interface StreamRetryOptions {
  provider: ProviderName;
  maxRetries: number;
  signal: AbortSignal;
  /** First back-off delay; doubles per retry, with jitter. */
  baseDelayMs?: number;
}

const MAX_DELAY_MS = 8_000;

/**
 * The events of `attempt`, which hands them to its sink as it reads them, handed on in
 * batches (see `pushed`). A `StreamInterrupted` before the first event means a fresh
 * request (after a back-off); after the first event it is an `llm_unavailable` error,
 * since repeating would show the person the start of the answer twice.
 */
export function streamWithRetry(
  attempt: (sink: EventSink) => Promise<void>,
  opts: StreamRetryOptions,
): AsyncIterable<ModelEvent> {
  return pushed((sink) => retrying(attempt, opts, sink));
}

async function retrying(
  attempt: (sink: EventSink) => Promise<void>,
  opts: StreamRetryOptions,
  sink: EventSink,
): Promise<void> {
  const base = opts.baseDelayMs ?? 500;
  for (let retry = 0; ; retry++) {
    let emitted = false;
    try {
      await attempt({
        emit: (event) => {
          // The usage of an attempt that broke off is owed, not shown: it does not stop a retry.
          if (event.type !== "usage") emitted = true;
          sink.emit(event);
        },
        stopped: sink.stopped,
      });
      return;
    } catch (err) {
      if (opts.signal.aborted) throw abortedError(err);
      if (!(err instanceof StreamInterrupted)) throw err;
      if (emitted) throw brokeOffError(opts.provider, err);
      if (retry >= opts.maxRetries) {
        throw unavailableError({ provider: opts.provider, attempts: retry + 1 }, "the stream broke off", err);
      }
      const delay = Math.min(MAX_DELAY_MS, base * 2 ** retry) * (0.75 + Math.random() * 0.5);
      log.warn(
        { provider: opts.provider, retry: retry + 1, reason: err.message },
        "model stream broke, retrying",
      );
      await sleep(delay, opts.signal);
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(abortedError(signal.reason));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortedError(signal.reason));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
