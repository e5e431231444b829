import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";

/**
 * A tool call's timeout, kept here rather than by the SDK: the SDK's timer runs on while
 * the server waits for its person (a form or a page the server asked them to fill in or
 * open, which they may take minutes over), and only progress renews it. This one renews
 * on progress too, stands still while a question to the person is open, and restarts in
 * full when it is answered. The call's total time, questions left out, is capped as well.
 * When it runs out, `signal` aborts with the same error the SDK's timeout gives.
 */
export class CallDeadline {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  /** Questions open now: the clock runs only while there are none. */
  private asking = 0;
  /** Time the call has run, questions left out, up to `runningSince`. */
  private ranMs = 0;
  private runningSince: number;
  /** The call is over: nothing is timed any more, also when a question settles after it. */
  private disposed = false;

  constructor(
    private readonly idleMs: number,
    private readonly totalMs: number,
  ) {
    this.runningSince = Date.now();
    this.arm(idleMs);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The server reported progress: it gets its whole idle time again (within the total). */
  renew(): void {
    if (this.asking === 0) this.arm(this.idleMs);
  }

  /** Stops the clock while `question` is open; it runs again, renewed, once it is settled. */
  async during<T>(question: Promise<T>): Promise<T> {
    if (this.asking++ === 0) {
      clearTimeout(this.timer);
      this.ranMs += Date.now() - this.runningSince;
    }
    try {
      return await question;
    } finally {
      if (--this.asking === 0) {
        this.runningSince = Date.now();
        this.arm(this.idleMs);
      }
    }
  }

  dispose(): void {
    this.disposed = true;
    clearTimeout(this.timer);
  }

  private arm(ms: number): void {
    clearTimeout(this.timer);
    if (this.disposed || this.controller.signal.aborted) return;
    const left = this.totalMs - this.ranMs - (Date.now() - this.runningSince);
    this.timer = setTimeout(
      () => this.controller.abort(new McpError(ErrorCode.RequestTimeout, "Request timed out")),
      Math.max(0, Math.min(ms, left)),
    );
  }
}
