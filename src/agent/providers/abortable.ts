import { abortedError } from "./errors.js";

/**
 * `request`, or the abort of `signal`, whichever comes first. The OpenAI SDK sleeps out a
 * Retry-After between its attempts without listening to the request's signal, so a Stop
 * pressed during a 429's wait would wait for it too (20 s for a `retry-after: 20`). What
 * the abandoned request still returns is let go: an answer's body is cancelled, so that
 * its connection is freed, and a failure is dropped.
 */
export function untilAborted(request: Promise<Response>, signal: AbortSignal): Promise<Response> {
  if (signal.aborted) {
    void request.then(
      (r) => r.body?.cancel(),
      () => undefined,
    );
    return Promise.reject(abortedError(signal.reason));
  }
  return new Promise<Response>((resolve, reject) => {
    const onAbort = () => {
      reject(abortedError(signal.reason));
      void request.then(
        (r) => r.body?.cancel().catch(() => undefined),
        () => undefined,
      );
    };
    signal.addEventListener("abort", onAbort, { once: true });
    request.then(
      (r) => {
        signal.removeEventListener("abort", onAbort);
        resolve(r);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}
