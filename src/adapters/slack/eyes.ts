import type { WebClient } from "@slack/web-api";
import { log } from "../../log.js";
import type { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import type { StateStore } from "../../store/state.js";

/** How long a closing adapter waits for the :eyes: removals still under way (its drain is over by then). */
export const EYES_CLOSE_MS = 1_000;
/** How often a live process takes away the :eyes: that stopped processes left to others. */
export const EYES_SWEEP_MS = 5_000;
/** A left :eyes: still not taken away after this long is given up (the message may be beyond reach). */
const LEFT_FOR_MS = 60 * 60 * 1000;
/** The workspace's list of the :eyes: stopping processes could not take away in time (members `at|channel:ts`). */
const leftList = (team: string) => `slack:eyes-left:${team}`;

/** Slack's answers that say the :eyes: is gone already, or never can be taken away. */
const GONE = new Set([
  "no_reaction",
  "message_not_found",
  "channel_not_found",
  "not_in_channel",
  "is_archived",
]);

const slackError = (err: unknown) => (err as { data?: { error?: string } })?.data?.error;

/**
 * The :eyes: the bot puts on a message it takes (`Inbound.mark`: `channel:ts`) and takes
 * away once the message is answered, here or by a process that answered it after the one
 * that took it stopped. One a stopping process could not take away before it closed (a
 * 429 that outlasts its close) is left in the store, and a live process takes it away.
 */
export class Eyes {
  private readonly removing = new Map<Promise<void>, string>();
  private readonly closing = new AbortController();
  private sweeper: ReturnType<typeof setInterval> | undefined;
  private sweep: Promise<void> = Promise.resolve();
  /** The workspace's list (see `leftList`), once started. */
  private left: string | undefined;

  constructor(
    private readonly deps: {
      writes: WebClient;
      scheduler: WriteScheduler;
      /** Where the :eyes: a closing process could not take away are left for the others. */
      state?: StateStore;
      sweepMs?: number;
    },
  ) {}

  /**
   * `already_reacted` is the bot's own :eyes: there already (a process killed before it
   * stored the message left it, and Slack redelivered the message here): the message shows
   * it, so it is this answer's to take away like one added now.
   */
  async add(channel: string, ts: string): Promise<void> {
    try {
      await this.deps.writes.reactions.add({ channel, timestamp: ts, name: "eyes" });
    } catch (err) {
      if (slackError(err) !== "already_reacted") throw err;
    }
  }

  /**
   * `reactions.remove` is Tier 2 (20/min), spent when the :eyes: was added (an :eyes: is
   * shown only while it can be taken away again), so it goes at once; a 429 (removals
   * bunched by answers of different lengths) is waited out: removing is idempotent. Answers
   * that end in a stop's drain take theirs away too, until the adapter closes.
   */
  remove(mark: string): Promise<void> {
    const removal = this.take(mark).then(
      () => undefined,
      (err: unknown) => log.debug({ err, mark }, "acknowledgement not cleared"),
    );
    const tracked = removal.finally(() => this.removing.delete(tracked));
    this.removing.set(tracked, mark);
    return tracked;
  }

  /** Takes away the :eyes: others left in `team`, now and every `sweepMs`, until the adapter closes. */
  start(team: string): void {
    if (!this.deps.state || this.sweeper) return;
    this.left = leftList(team);
    const run = () => {
      this.sweep = this.sweep.then(() => this.sweepLeft());
    };
    run();
    this.sweeper = setInterval(run, this.deps.sweepMs ?? EYES_SWEEP_MS);
    this.sweeper.unref();
  }

  /**
   * Waits for the removals under way, `ms` at most: a leftover :eyes: is not worth holding
   * up a shutdown, so those still waiting (for a 429's Retry-After) are left to the others.
   */
  async close(ms = EYES_CLOSE_MS): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    const timer = new Promise<void>((r) => setTimeout(r, ms).unref());
    await Promise.race([Promise.allSettled([...this.removing.keys(), this.sweep]), timer]);
    const left = [...new Set(this.removing.values())];
    this.closing.abort();
    const { state } = this.deps;
    const list = this.left;
    if (!state || !list || left.length === 0) return;
    await Promise.all(left.map((mark) => state.listAdd(list, `${Date.now()}|${mark}`))).then(
      () => log.info({ marks: left.length }, "left :eyes: not taken away yet to the other processes"),
      (err: unknown) =>
        log.warn({ err, marks: left.length }, "the :eyes: not taken away could not be left to others"),
    );
  }

  private take(mark: string): Promise<unknown> {
    const at = mark.indexOf(":");
    const [channel, ts] = [mark.slice(0, at), mark.slice(at + 1)];
    return this.deps.scheduler.as(
      "update",
      () => this.deps.writes.reactions.remove({ channel, timestamp: ts, name: "eyes" }),
      { signal: this.closing.signal },
    );
  }

  /** One pass over the :eyes: left by stopped processes; any replica may take one (a second finds it gone). */
  private async sweepLeft(): Promise<void> {
    const state = this.deps.state!;
    const list = this.left!;
    try {
      for (const member of await state.listMembers(list)) {
        if (this.closing.signal.aborted) return;
        const bar = member.indexOf("|");
        const [at, mark] = [Number(member.slice(0, bar)), member.slice(bar + 1)];
        const done = await this.take(mark).then(
          () => true,
          (err: unknown) => GONE.has(slackError(err) ?? "") || !(Date.now() - at < LEFT_FOR_MS),
        );
        if (done) await state.listRemove(list, member);
      }
    } catch (err) {
      log.debug({ err }, "the :eyes: others left not looked at this time");
    }
  }
}
