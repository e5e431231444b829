import { randomUUID } from "node:crypto";
import type { ThreadKey } from "../core/thread.js";
import type { Store } from "./index.js";
import { createState, type Lease, type StateStore } from "./state.js";
import type { TurnInput, TurnLedger } from "./turns.js";

/** Messages of a thread waiting for its lock, per thread, and the threads that have some. */
const waitingKey = (key: ThreadKey) => `waiting-message:${key}`;
const THREADS = "waiting-messages";

/** A message kept while it waits: `id` is the one it is handed over under, whoever hands it. */
export interface WaitingMessage {
  id: string;
  owner: string;
  input: TurnInput;
}

/** A kept message, as `keep` wrote it (`forget` takes exactly this member back). */
export interface Kept {
  key: ThreadKey;
  id: string;
  member: string;
}

function parse(member: string): WaitingMessage | undefined {
  try {
    const m = JSON.parse(member) as Partial<WaitingMessage>;
    return m.id && m.owner && m.input ? (m as WaitingMessage) : undefined;
  } catch {
    return undefined;
  }
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

  async keep(key: ThreadKey, owner: string, input: TurnInput): Promise<Kept> {
    const id = randomUUID();
    const member = JSON.stringify({ id, owner, input } satisfies WaitingMessage);
    // The message before its thread: a thread listed is never missing what it lists.
    await this.state.listAdd(waitingKey(key), member);
    await this.state.listAdd(THREADS, key);
    return { key, id, member };
  }

  /**
   * Its turn begins here, or it was handed over or given the restart note: nobody else is
   * to answer it. `lease`, the thread's lock, when its turn begins: the removal is then the
   * claim, true only when this call took the message; false when a process that found its
   * keeper silent (stalled past its heartbeat) adopted it first, under the same lock, and
   * answers it.
   */
  async forget(kept: Kept, lease?: Lease): Promise<boolean> {
    const list = waitingKey(kept.key);
    let took = true;
    if (lease && !(await this.state.listRemoveIfHolding(lease, list, kept.member))) {
      // Still there: the lease is what failed (the turn meets the lost lock itself), not the claim.
      took = (await this.state.listMembers(list)).includes(kept.member);
      if (took) await this.state.listRemove(list, kept.member);
    } else if (!lease) await this.state.listRemove(list, kept.member);
    await this.unlistIfEmpty(kept.key);
    return took;
  }

  /** Threads that may have kept messages (a few too many: `orphans` finds none there). */
  threads(): Promise<ThreadKey[]> {
    return this.state.listMembers(THREADS);
  }

  /** The thread's kept messages whose process no longer beats, each with its member as stored. */
  async orphans(
    key: ThreadKey,
    alive: (owner: string) => Promise<boolean>,
  ): Promise<Array<{ message: WaitingMessage; member: string }>> {
    const members = await this.state.listMembers(waitingKey(key));
    const owners = new Map<string, Promise<boolean>>();
    const found: Array<{ message: WaitingMessage; member: string }> = [];
    for (const member of members) {
      const message = parse(member);
      if (!message) {
        // Nothing to answer in it, and it would be read again every round.
        await this.state.listRemove(waitingKey(key), member);
        continue;
      }
      if (!owners.has(message.owner)) owners.set(message.owner, alive(message.owner));
      if (!(await owners.get(message.owner))) found.push({ message, member });
    }
    if (members.length === 0) await this.unlistIfEmpty(key);
    return found;
  }

  /**
   * The orphans of the thread join its handed messages, under the ids they were kept
   * with, so that two processes adopting one message hand it once (`takeHanded` keeps one
   * per id). Called under the thread's lock, just before the handed messages are taken.
   */
  async adopt(key: ThreadKey, alive: (owner: string) => Promise<boolean>): Promise<number> {
    const orphans = await this.orphans(key, alive);
    for (const { message, member } of orphans) {
      await this.ledger.hand(key, message.input, message.id);
      await this.state.listRemove(waitingKey(key), member);
    }
    if (orphans.length) await this.unlistIfEmpty(key);
    return orphans.length;
  }

  /**
   * Unlisted, then looked at again: a message kept in between lists the thread after
   * itself, so the thread stays listed whichever way the two interleave.
   */
  private async unlistIfEmpty(key: ThreadKey): Promise<void> {
    if ((await this.state.listMembers(waitingKey(key))).length > 0) return;
    await this.state.listRemove(THREADS, key);
    if ((await this.state.listMembers(waitingKey(key))).length > 0) await this.state.listAdd(THREADS, key);
  }
}
