import type { ThreadKey } from "../core/thread.js";
import { log } from "../log.js";
import type { Claims } from "./claims.js";
import type { Store } from "./index.js";
import { ClaimLost } from "./locks.js";
import { createState, type Lease, type StateStore } from "./state.js";
import type { TurnInput, TurnLedger } from "./turns.js";

/**
 * Per thread, the list of its kept messages as `{id}|{owner}` (a list member is part of a
 * row's key on SQL, at most 1,024 characters: the message itself is kept beside it), and
 * the list of threads that have some.
 */
const listKey = (key: ThreadKey) => `waiting-message:${key}`;
const bodyKey = (key: ThreadKey, id: string) => `waiting-message-body:${key}:${id}`;
const THREADS = "waiting-messages";

/** A kept message: `id` is the one it is handed over under, whoever hands it; `owner` the process it waits in. */
export interface Kept {
  key: ThreadKey;
  id: string;
  owner: string;
}

const memberOf = (kept: Kept) => `${kept.id}|${kept.owner}`;

function keptOf(key: ThreadKey, member: string): Kept | undefined {
  const [id, owner, ...rest] = member.split("|");
  return id && owner && rest.length === 0 ? { key, id, owner } : undefined;
}

/**
 * Messages acknowledged to the platform and waiting behind another turn of their thread.
 * The platform will not send them again (Slack and Discord deliver an event once it is
 * acknowledged), so a process that dies with one in memory (kill -9, a lost machine) would
 * take it along: kept here while it waits, it is handed over (`TurnLedger.hand`) by the
 * process that next holds the thread's lock, once its process no longer beats.
 */
export class WaitingMessages {
  private readonly state: StateStore;

  constructor(
    store: Store,
    private readonly ledger: TurnLedger,
  ) {
    this.state = createState(store);
  }

  /**
   * `claims`: its message's (`Dedupe.holding`), taken as its member is listed, or
   * `ClaimLost` and nothing listed: a kill -9 between the two would lose the message.
   */
  async keep(kept: Kept, input: TurnInput, claims?: Claims): Promise<void> {
    // The message, then its member: what is listed is always there. Its thread is listed
    // before the member, so that a kill -9 between the two leaves a copy the start-up scan
    // finds, and again after it, since the tidy of the thread's last message may have
    // unlisted it in between (a thread listed with nothing is unlisted by `orphans`).
    await this.state.set(bodyKey(kept.key, kept.id), input);
    await this.state.listAdd(THREADS, kept.key);
    if (!claims) await this.state.listAdd(listKey(kept.key), memberOf(kept));
    else if ((await this.state.listAddClaiming(listKey(kept.key), memberOf(kept), claims)) === "claim") {
      await this.state.delete(bodyKey(kept.key, kept.id));
      throw new ClaimLost(kept.key);
    }
    await this.state.listAdd(THREADS, kept.key);
  }

  /** The kept copy is still there (no process adopted it). */
  async holds(kept: Kept): Promise<boolean> {
    return (await this.state.listMembers(listKey(kept.key))).includes(memberOf(kept));
  }

  /**
   * Its turn's record is written (naming this copy: `TurnRecord.took`), or it was handed
   * over or given the restart note: nobody else is to answer it. `lease`, the thread's
   * lock, when its turn runs: the removal is then the claim, true only when this call took
   * the message; false when a process that found its keeper silent (stalled past its
   * heartbeat) adopted it first, under the same lock, and answers it.
   */
  async forget(kept: Kept, lease?: Lease): Promise<boolean> {
    const list = listKey(kept.key);
    const member = memberOf(kept);
    let took = true;
    if (lease && !(await this.state.listRemoveIfHolding(lease, list, member))) {
      // Still there: the lease is what failed (the turn meets the lost lock itself), not the claim.
      took = await this.holds(kept);
      if (took) await this.state.listRemove(list, member);
    } else if (!lease) await this.state.listRemove(list, member);
    // Not waited for: the turn goes on while these land.
    void this.tidy(kept).catch((err: unknown) =>
      log.debug({ err, key: kept.key }, "could not tidy a forgotten waiting message"),
    );
    return took;
  }

  /** Threads that may have kept messages (a few too many: `orphans` finds none there). */
  threads(): Promise<ThreadKey[]> {
    return this.state.listMembers(THREADS);
  }

  /** The thread's kept messages whose process no longer beats, oldest first. */
  async orphans(
    key: ThreadKey,
    alive: (owner: string) => Promise<boolean>,
  ): Promise<Array<{ kept: Kept; input: TurnInput }>> {
    const members = await this.state.listMembers(listKey(key));
    const owners = new Map<string, Promise<boolean>>();
    const found: Array<{ kept: Kept; input: TurnInput }> = [];
    for (const member of members) {
      const kept = keptOf(key, member);
      if (kept) {
        if (!owners.has(kept.owner)) owners.set(kept.owner, alive(kept.owner));
        if (await owners.get(kept.owner)) continue;
        const input = await this.state.get<TurnInput>(bodyKey(key, kept.id));
        if (input) {
          found.push({ kept, input });
          continue;
        }
      }
      // Nothing to answer in it (not ours to read, or its message is gone), and it would be read every round.
      await this.state.listRemove(listKey(key), member);
    }
    if (members.length === 0) await this.unlistIfEmpty(key);
    return found.sort((a, b) => (a.input.sentAt ?? 0) - (b.input.sentAt ?? 0));
  }

  /**
   * The orphans of the thread join its handed messages, under the ids they were kept
   * with, so that two processes adopting one message hand it once (`takeHanded` keeps one
   * per id). Called under the thread's lock (`lease`), just before the handed messages are
   * taken: a removal the lease no longer covers takes its handed copy back, since the
   * thread's new holder may adopt the message itself.
   */
  async adopt(key: ThreadKey, alive: (owner: string) => Promise<boolean>, lease?: Lease): Promise<number> {
    let adopted = 0;
    for (const { kept, input } of await this.orphans(key, alive)) {
      await this.ledger.hand(key, input, kept.id);
      const removed = lease
        ? await this.state.listRemoveIfHolding(lease, listKey(key), memberOf(kept))
        : await this.state.listRemove(listKey(key), memberOf(kept)).then(() => true);
      if (!removed) {
        await this.ledger.unhand(key, kept.id);
        break;
      }
      await this.state.delete(bodyKey(key, kept.id));
      adopted++;
    }
    if (adopted) await this.unlistIfEmpty(key);
    return adopted;
  }

  private async tidy(kept: Kept): Promise<void> {
    await this.state.delete(bodyKey(kept.key, kept.id));
    await this.unlistIfEmpty(kept.key);
  }

  /**
   * Unlisted, then looked at again: a message kept in between lists the thread after
   * itself, so the thread stays listed whichever way the two interleave.
   */
  private async unlistIfEmpty(key: ThreadKey): Promise<void> {
    if ((await this.state.listMembers(listKey(key))).length > 0) return;
    await this.state.listRemove(THREADS, key);
    if ((await this.state.listMembers(listKey(key))).length > 0) await this.state.listAdd(THREADS, key);
  }
}
