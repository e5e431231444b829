import type { Config } from "../config.js";
import { platformOf, type ThreadKey } from "../core/thread.js";
import { log } from "../log.js";
import type { ThreadLock } from "../store/locks.js";
import type { StopRequests } from "../store/stop-requests.js";
import type { TurnLedger } from "../store/turns.js";
import { mayDecide } from "./approvals/policy.js";
import type { Interaction } from "./contract.js";
import { mayNotStop, type RunningTurns } from "./stops.js";

/** How often this replica looks for Stops other replicas took for its answers, and for those replicas. */
const POLL_MS = 1_000;

export interface RemoteStopsDeps {
  stops: StopRequests;
  ledger: TurnLedger;
  lock: ThreadLock;
  config: Config;
  running: () => RunningTurns;
}

/**
 * Stop across replicas. Slack and Discord hand a click or a command to any replica, often
 * not the one writing the answer: that one is found by the turn's record, checks who may
 * stop it (the record names the asker and the place), and leaves a request in the store,
 * which the writing replica takes within a second and stops its answer with. Alone on
 * its store, a process only asks once a second whether others have joined it.
 */
export class RemoteStops {
  /** Other replicas share the store (as of the last poll): without them there is nothing to do. */
  private shared = false;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;

  constructor(private readonly deps: RemoteStopsDeps) {}

  start(): void {
    this.timer ??= setInterval(() => void this.poll(), POLL_MS);
    this.timer.unref();
    void this.poll();
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** A Stop button was offered: noted for a click that reaches another replica. */
  offered(ref: string, key: ThreadKey): void {
    if (!this.shared) return;
    this.deps.stops
      .button(ref, key)
      .catch((err: unknown) => log.debug({ err, key }, "stop button not noted"));
  }

  /**
   * A Stop this process cannot act on itself: for the thread `key` (the stop command) or
   * the Stop button `ref`. The sentence for whoever asked ("" once the request is left),
   * or undefined when no other live replica is writing that answer.
   */
  async request(
    at: { key?: ThreadKey; ref?: string },
    by: Interaction["user"],
    inGroups?: Interaction["inGroups"],
  ): Promise<string | undefined> {
    const { stops, ledger, lock, config } = this.deps;
    // Asked again here: a replica started a moment ago may not have seen the others yet.
    if (!this.shared) await this.lookForOthers();
    if (!this.shared) return undefined;
    const key = at.key ?? (at.ref ? await stops.threadOf(at.ref) : undefined);
    if (!key) return undefined;
    const record = await ledger.get(key);
    const owner = record?.owner;
    if (!record?.input || record.waiting || !owner || owner === lock.owner) return undefined;
    if (!(await lock.alive(owner))) return undefined;
    const asker = record.input.user;
    const place = { platform: platformOf(key) ?? "console", channel: record.input.channel };
    if (!(await mayDecide(config, place, asker.id, by, inGroups))) return mayNotStop(asker);
    await stops.ask(key, {
      by: by.name ?? by.id,
      ...(record.id ? { run: record.id } : {}),
      ...(at.ref ? { ref: at.ref } : {}),
    });
    log.info({ key, owner }, "stop passed to the replica writing the answer");
    return "";
  }

  private async lookForOthers(): Promise<void> {
    const alone = !this.shared;
    this.shared = (await this.deps.lock.others()).length > 0;
    // A replica has just joined (a rolling deploy, a scale-out): the Stop buttons offered
    // while this one was alone were not noted, and a click on them may now reach it.
    if (alone && this.shared) for (const [ref, key] of this.deps.running().buttons()) this.offered(ref, key);
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      await this.lookForOthers();
      if (!this.shared) return;
      const running = this.deps.running();
      const here = new Set(running.keys());
      if (here.size === 0) return;
      for (const key of await this.deps.stops.asked()) {
        if (!here.has(key)) continue;
        const request = await this.deps.stops.take(key);
        if (request) running.stopAsked(key, request);
      }
    } catch (err) {
      log.debug({ err }, "stop requests not read");
    } finally {
      this.polling = false;
    }
  }
}
