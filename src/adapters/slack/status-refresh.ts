import type { WebClient } from "@slack/web-api";
import { log } from "../../log.js";
import type { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";

/**
 * How long after it was set a thread's status is set again while the answer is still
 * being worked on. Slack clears an assistant thread's status two minutes after it was set
 * without a message ("A two minute timeout applies", assistant.threads.setStatus docs),
 * and the loop says "Calling X…" once per call: a long tool call or a slow first word
 * would leave the thread showing nothing while the answer is still on its way.
 */
export const STATUS_REFRESH_MS = 90_000;

/**
 * Sends `send(status)` again `everyMs` after the status was last set, while the answer is
 * being written (`start` to `stop`) and no text came after that status (Slack shows the
 * text then, and a status set again over it would be stale). A refresh that has not gone
 * out when text comes or the answer ends is called off by its signal.
 */
export class StatusRefresh {
  private status = "";
  private setAt = 0;
  private live = false;
  private timer: NodeJS.Timeout | undefined;
  private pending: AbortController | undefined;

  constructor(
    private readonly send: (status: string, signal: AbortSignal) => Promise<unknown>,
    private readonly everyMs = STATUS_REFRESH_MS,
  ) {}

  /** The answer started: its status is kept shown from now on. */
  start(): void {
    this.live = true;
    this.arm();
  }

  /** A status was set now ("" cleared it). */
  set(status: string): void {
    this.status = status;
    this.setAt = Date.now();
    this.arm();
  }

  /** Text came after the status: no refresh until the next status. */
  quiet(): void {
    this.status = "";
    this.cancel();
  }

  /** The answer ended (or another process has it): no refresh any more. */
  stop(): void {
    this.live = false;
    this.cancel();
  }

  private cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending?.abort();
    this.pending = undefined;
  }

  private arm(): void {
    this.cancel();
    if (!this.live || this.status === "") return;
    const wait = Math.max(0, this.setAt + this.everyMs - Date.now());
    this.timer = setTimeout(() => void this.refresh(), wait);
    this.timer.unref?.();
  }

  private async refresh(): Promise<void> {
    this.timer = undefined;
    const pending = new AbortController();
    this.pending = pending;
    const status = this.status;
    try {
      await this.send(status, pending.signal);
    } catch (err) {
      log.debug({ err }, "thread status not set again");
    }
    if (this.pending !== pending) return;
    this.pending = undefined;
    // Counted from this attempt, sent or dropped: the next one is another interval away.
    this.setAt = Date.now();
    this.arm();
  }
}

/**
 * A reply's refresh of its thread's status: through the write scheduler's lowest lane, and
 * dropped when it cannot go out soon, since it only keeps up what is already shown.
 */
export function threadStatusRefresh(
  deps: { web: WebClient; scheduler: WriteScheduler; clears?: { refreshMs: number } },
  place: { channel: string; threadTs: string },
): StatusRefresh {
  const { channel, threadTs } = place;
  return new StatusRefresh(
    (status, signal) =>
      deps.scheduler.as(
        "background",
        () => deps.web.assistant.threads.setStatus({ channel_id: channel, thread_ts: threadTs, status }),
        { dropAfterMs: 30_000, signal, requeue: false },
      ),
    deps.clears?.refreshMs,
  );
}
