import { randomUUID } from "node:crypto";
import { log } from "../log.js";
import type { StateStore } from "./state.js";

/** The tickets of a thread's turns waiting for its lock in the processes sharing the store. */
const lineKey = (key: string) => `line:${key}`;

/** `{sentAt}|{owner}|{id}|{refreshedAt}`: what the others need to know is all in the member. */
interface Ticket {
  sentAt: number;
  owner: string;
  refreshedAt: number;
}

function parse(member: string): Ticket {
  const [sentAt, owner, , refreshedAt] = member.split("|");
  // A ticket without a refresh time (written before tickets had one) reads as stale.
  return { sentAt: Number(sentAt), owner: owner ?? "", refreshedAt: Number(refreshedAt ?? Number.NaN) };
}

/**
 * A turn's place in its thread's line, for as long as it waits. Its ticket names the time
 * it was last refreshed: a waiter that stopped waiting without taking its ticket back (the
 * store failed the removal) is alive, so only that time tells the others not to wait behind it.
 */
export class PlaceInLine {
  private member: string;
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;

  private constructor(
    private readonly state: StateStore,
    private readonly key: string,
    private readonly ticket: string,
  ) {
    this.member = `${ticket}|${Date.now()}`;
  }

  /**
   * Refreshed every `refreshEveryMs` by a timer of its own, not by the turn's polls, which
   * a slow store or a long pause between them would space out past the others' patience.
   */
  static async join(
    state: StateStore,
    key: string,
    sentAt: number,
    owner: string,
    refreshEveryMs: number,
  ): Promise<PlaceInLine> {
    const place = new PlaceInLine(state, key, `${sentAt}|${owner}|${randomUUID()}`);
    await state.listAdd(lineKey(key), place.member);
    place.timer = setInterval(() => {
      place.refreshing ??= place.refresh().finally(() => {
        place.refreshing = undefined;
      });
    }, refreshEveryMs);
    place.timer.unref();
    return place;
  }

  /** The new ticket is added before the old one goes, so the line never lacks this turn. */
  private async refresh(): Promise<void> {
    const old = this.member;
    const fresh = `${this.ticket}|${Date.now()}`;
    try {
      await this.state.listAdd(lineKey(this.key), fresh);
      this.member = fresh;
      await this.state.listRemove(lineKey(this.key), old);
    } catch (err) {
      // One the store kept goes stale by itself; the next refresh writes a fresh one.
      log.debug({ err, key: this.key }, "refreshing a ticket in the thread's line failed");
    }
  }

  async leave(): Promise<void> {
    clearInterval(this.timer);
    // A refresh under way would otherwise add a ticket after this one is taken back.
    await this.refreshing;
    await this.state
      .listRemove(lineKey(this.key), this.member)
      .catch((err: unknown) =>
        log.warn({ err, key: this.key }, "taking a ticket out of the thread's line failed; it goes stale"),
      );
  }
}

/**
 * Another process waits with a message of the thread sent before `sent`. Each process has
 * one ticket per thread at a time (its local line's head), so two processes never wait for
 * each other. A ticket whose process stopped, or that was not refreshed for `staleAfterMs`,
 * is dropped.
 */
export async function earlierWaiting(
  state: StateStore,
  key: string,
  sent: number,
  self: string,
  alive: (owner: string) => Promise<boolean>,
  staleAfterMs: number,
): Promise<boolean> {
  for (const member of await state.listMembers(lineKey(key))) {
    const ticket = parse(member);
    if (ticket.owner === self || !(ticket.sentAt < sent)) continue;
    const age = Date.now() - ticket.refreshedAt;
    const stale = !(age <= staleAfterMs);
    if (!stale && (await alive(ticket.owner))) return true;
    if (stale)
      log.warn(
        { key, owner: ticket.owner, ageMs: Number.isNaN(age) ? undefined : age },
        "skipped a waiting message's ticket not refreshed within a lease's life; its process no longer waits for it",
      );
    await state.listRemove(lineKey(key), member);
  }
  return false;
}
