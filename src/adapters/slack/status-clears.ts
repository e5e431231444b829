import { STATUS_REFRESH_MS } from "./status-refresh.js";

/** A thread, as a status is set on it. */
export interface StatusPlace {
  channel: string;
  threadTs: string;
}

const MAX_REMEMBERED = 10_000;

/**
 * What took a Slack thread's status (`assistant.threads.setStatus`) away, per thread.
 * Slack clears it when the app posts in the thread ("automatically cleared when the app
 * sends a reply", the method's docs), and a thread has one status for all its answers: a
 * message that waits behind the thread's answer is acknowledged with "is thinking…"
 * while that answer is written, and the answer's posts and its end take it away before
 * the waiting one starts. So each reply notes here where its answer ended and what it
 * posted after, and a reply whose status was set before the latest note sets it again as
 * its own answer starts; an answer nothing came between needs no second call. This
 * process's replies only: an answer another replica wrote meanwhile goes unseen.
 */
export class StatusClears {
  private readonly latest = new Map<string, number>();
  private notes = 0;

  /** `refreshMs`: how long after it was set a status still wanted is set again, before Slack's 2-minute timeout. */
  constructor(readonly refreshMs = STATUS_REFRESH_MS) {}

  /** Where the thread stands: a later `since` that differs means its status may be gone. */
  since(place: StatusPlace): number {
    return this.latest.get(keyOf(place)) ?? 0;
  }

  /** This process posted in the thread, or an answer there ended (which clears its status). */
  note(place: StatusPlace): void {
    const key = keyOf(place);
    this.notes += 1;
    this.latest.delete(key);
    this.latest.set(key, this.notes);
    // Oldest first: a thread is forgotten only after 10,000 others were noted since.
    if (this.latest.size > MAX_REMEMBERED) this.latest.delete(this.latest.keys().next().value as string);
  }
}

const keyOf = (place: StatusPlace) => `${place.channel}:${place.threadTs}`;
