/** A duration for people: "2 s", "1.5 s". */
export function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

/** The caller's signal (if any), also aborted after `ms`: one bound for work that may stall. */
export function withTimeout(ms: number, signal?: AbortSignal): AbortSignal {
  const timeout = AbortSignal.timeout(ms);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}

/** Work that `withDeadline` gave up on; the message names the work and its deadline. */
export class DeadlineError extends Error {
  override readonly name = "DeadlineError";

  constructor(
    readonly what: string,
    readonly ms: number,
    options: { cause?: unknown } = {},
  ) {
    super(`${what} did not finish within ${seconds(ms)}`, options);
  }
}

/**
 * Runs `work` with a `withTimeout` signal and gives up when that signal aborts, even if
 * `work` ignores it (not every SDK call takes a signal). A passed deadline rejects with a
 * DeadlineError naming `what`; the caller's abort rejects with the caller's reason.
 */
export async function withDeadline<T>(
  what: string,
  ms: number,
  work: (signal: AbortSignal) => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  const bounded = withTimeout(ms, signal);
  let giveUp: (() => void) | undefined;
  const abandoned = new Promise<never>((_, reject) => {
    giveUp = () => reject(bounded.reason);
    bounded.addEventListener("abort", giveUp, { once: true });
  });
  try {
    bounded.throwIfAborted();
    return await Promise.race([work(bounded), abandoned]);
  } catch (err) {
    if (bounded.aborted && !signal?.aborted) throw new DeadlineError(what, ms, { cause: err });
    throw err;
  } finally {
    if (giveUp) bounded.removeEventListener("abort", giveUp);
  }
}
