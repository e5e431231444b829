import { randomUUID } from "node:crypto";
import type { PendingStep } from "../core/messages.js";
import type { ReplyAddress } from "../core/replies.js";
import type { ThreadKey } from "../core/thread.js";
import type { Claims } from "./claims.js";
import type { Store } from "./index.js";
import { ClaimLost, LockLost } from "./locks.js";
import { createState, type Lease, type StateStore } from "./state.js";
import type { TurnInput, TurnRecord, TurnRun, WaitingTurn } from "./turn-record.js";

export type { TookCopies, TurnInput, TurnRecord, TurnRun, WaitingTurn } from "./turn-record.js";

const recordKey = (key: ThreadKey) => `turn:${key}`;
const PENDING = "turns";
/** Messages a stopping process handed over, per thread, and the threads that have some. */
const handedKey = (key: ThreadKey) => `handover:${key}`;
/**
 * A handed message itself, beside its id in the thread's list: a list member is part of a
 * row's key on SQL (1,024 characters at most), and a message with its files is longer.
 */
const handedBodyKey = (key: ThreadKey, id: string) => `handed-message:${key}:${id}`;
const HANDED = "handed";

/**
 * The turns in flight, one record each beside the session (so recording where a reply is
 * never rewrites the conversation), and a list of their keys to find them at start-up.
 * The list gains a key before its record is written and loses it after the record is
 * deleted: after a crash it may name a key too many (`pending` filters), never too few.
 */
export class TurnLedger {
  private readonly state: StateStore;
  /** The lease each record is written under: its writes land only while that lease is held. */
  private readonly leases = new WeakMap<TurnRecord, Lease>();
  /** Records `open` is still writing. */
  private readonly opening = new WeakMap<TurnRecord, Promise<void>>();

  constructor(store: Store) {
    this.state = createState(store);
  }

  async begin(key: ThreadKey, run?: TurnRun, lease?: Lease): Promise<TurnRecord> {
    const record = this.open(key, run, lease);
    await this.opened(record);
    return record;
  }

  /**
   * A turn's record at once, written in the background: the model can be asked while it is
   * written, as long as nothing reaches the platform before `opened` resolves (a reply
   * whose record is missing could not be taken over). Every later write of the record
   * waits for this one. `lease`: the thread's lock, which this and every later write of
   * the record is fenced by (see `guard`); this one too, as it may land long after it was
   * made (a client that queued it while reconnecting), over the thread's next holder's
   * record: `LockLost`. `claims`: its message's, taken in the same write, or `ClaimLost`.
   */
  open(key: ThreadKey, run?: TurnRun, lease?: Lease, claims?: Claims): TurnRecord {
    const record: TurnRecord = { key, startedAt: new Date().toISOString(), ...run };
    this.guard(record, lease);
    const written = (async () => {
      // Listed first: a record is never where the takeover watch does not look.
      await this.state.listAdd(PENDING, key);
      if (!claims) return this.put(record);
      const outcome = await this.state.setClaiming(lease, recordKey(key), record, claims);
      if (outcome === "lease") throw new LockLost(key);
      if (outcome === "claim") throw new ClaimLost(key);
    })();
    written.catch(() => undefined);
    this.opening.set(record, written);
    return record;
  }

  /** Resolves once the record `open` made is stored; rejects with the store's error. */
  opened(record: TurnRecord): Promise<void> {
    return this.opening.get(record) ?? Promise.resolve();
  }

  /**
   * From now on the record is written only while `lease` (the thread's lock) is held: a
   * write after the lock was lost throws `LockLost` and changes nothing.
   */
  guard(record: TurnRecord, lease: Lease | undefined): void {
    if (lease) this.leases.set(record, lease);
  }

  /** The session was saved after a step: the answer so far is `shown`, and no call is in doubt. */
  async checkpoint(record: TurnRecord, shown: string): Promise<void> {
    record.shown = shown;
    delete record.calling;
    await this.write(record);
  }

  /** A step's calls start now: until the next checkpoint their outcome is unknown after a crash. */
  async calling(record: TurnRecord, step: PendingStep): Promise<void> {
    record.calling = step;
    await this.write(record);
  }

  /** The question as the model got it (with what its files said). */
  async asked(record: TurnRecord, text: string): Promise<void> {
    if (!record.input) return;
    record.input.text = text;
    // What they said is in the text now: read again, they would be in it twice.
    if (record.input.files?.length) record.input.filesNoted = true;
    await this.write(record);
  }

  /**
   * `owner` goes on with a turn whose process stopped. Only a death counts against the
   * limit (`died`): a process that handed the turn over as it stopped (a rolling deploy),
   * a handed message's first run, or the turn's own process going on with it (it dropped
   * the turn when its store fell silent, and lives) is not one.
   */
  async takeOver(
    record: TurnRecord,
    owner: string,
    died = record.owner !== owner && !record.handedOver,
  ): Promise<void> {
    if (died) record.takeovers = (record.takeovers ?? 0) + 1;
    else if (record.owner === owner && !record.handedOver) record.resumes = (record.resumes ?? 0) + 1;
    record.owner = owner;
    delete record.handedOver;
    await this.write(record);
  }

  /** Its reply could not be ended with the restart note this time (see `Takeovers`). */
  async recoverFailed(record: TurnRecord): Promise<void> {
    record.recoverFailures = (record.recoverFailures ?? 0) + 1;
    await this.write(record);
  }

  /** Its process stops and hands the turn to the others (written while it still holds the thread). */
  async handOver(record: TurnRecord): Promise<void> {
    record.handedOver = true;
    await this.write(record);
  }

  /** Records where the reply is now; awaited before the reply writes on. */
  async address(record: TurnRecord, address: ReplyAddress): Promise<void> {
    record.address = { ...address, messages: [...address.messages] };
    await this.write(record);
  }

  /** The turn stops until its approvals are decided; its record stays, with what it waits for. */
  async park(record: TurnRecord, waiting: WaitingTurn): Promise<void> {
    record.waiting = waiting;
    await this.write(record);
  }

  /**
   * The turn goes on in `owner`'s process (its step's calls run now): a crash from here on
   * ends it, never runs them again. The click that decided it may have reached another
   * replica than the one that parked it; named the parker, a resumed turn whose process
   * then stopped was skipped by the parker (its own record) and by everyone else (the
   * parker beats), and its half-written answer stayed as it was.
   */
  async unpark(record: TurnRecord, owner: string): Promise<void> {
    delete record.waiting;
    record.owner = owner;
    // It goes on in a new reply below the questions: a takeover from here retakes that one.
    delete record.address;
    delete record.shown;
    delete record.calling;
    record.replies = (record.replies ?? 0) + 1;
    await this.write(record);
  }

  async end(record: TurnRecord): Promise<void> {
    await this.opened(record);
    await this.handQueued(record);
    const lease = this.leases.get(record);
    const [owed, ...more] = record.cutOff ?? [];
    if (owed) {
      // Its place, still listed, goes back to a reply cut off before it, named as this turn
      // was: the watch ends that one once the thread is idle in the process named (the one
      // ending this turn, as a rule), or in any once that process is gone.
      const back: TurnRecord = { ...owed, owner: record.owner, ...(more.length ? { cutOff: more } : {}) };
      this.guard(back, lease);
      return this.put(back);
    }
    if (!lease) {
      await this.state.delete(recordKey(record.key));
      await this.state.listRemove(PENDING, record.key);
      return;
    }
    if (!(await this.state.deleteIfHolding(lease, recordKey(record.key)))) throw new LockLost(record.key);
    // Fenced too: lost in between (a stall), the key may name the new holder's record now,
    // and unlisted it would never be found should that process die. It stays instead, a key
    // too many (`pending` skips it), until that record ends.
    await this.state.listRemoveIfHolding(lease, PENDING, record.key);
  }

  /**
   * A message a stopping process acknowledged but will not answer: any process finishing
   * the thread's turns, or watching for such messages, answers it. Written without the
   * thread's lock (another process may be answering the thread), so never into its record.
   * `claims`: its message's, taken as it is listed, or `ClaimLost` and nothing handed.
   */
  async hand(key: ThreadKey, input: TurnInput, id: string = randomUUID(), claims?: Claims): Promise<void> {
    await this.state.set(handedBodyKey(key, id), input);
    if (!claims) await this.state.listAdd(handedKey(key), id);
    else if ((await this.state.listAddClaiming(handedKey(key), id, claims)) === "claim") {
      await this.state.delete(handedBodyKey(key, id));
      throw new ClaimLost(key);
    }
    await this.state.listAdd(HANDED, key);
  }

  /** Takes back a message `hand` handed under `id` (the process handing it lost the thread meanwhile). */
  async unhand(key: ThreadKey, id: string): Promise<void> {
    await this.state.listRemove(handedKey(key), id);
    await this.state.delete(handedBodyKey(key, id));
  }

  /**
   * The messages that waited behind a turn (handed over with it) go back to the thread's
   * handed messages, before the record that carries them ends or is replaced: whichever
   * way the turn went on (answered, after approvals, with the restart note, or a new
   * message took the thread), they are answered next, never dropped with the record.
   * Under ids of their own in the record, so handing them twice hands them once.
   */
  async handQueued(record: TurnRecord): Promise<void> {
    const queued = record.queued ?? [];
    for (const [i, input] of queued.entries())
      await this.hand(record.key, input, `${record.id ?? record.startedAt}:${i}`);
  }

  /** Threads with handed messages (maybe a few too many: `takeHanded` finds none there). */
  handedThreads(): Promise<ThreadKey[]> {
    return this.state.listMembers(HANDED);
  }

  /** The thread's handed messages, oldest first, taken (under the thread's lock). */
  async takeHanded(key: ThreadKey): Promise<TurnInput[]> {
    const { messages, members } = await this.handedIn(key);
    await this.dropHanded(key, members);
    return messages;
  }

  /**
   * The thread's handed messages, oldest first, read (under the thread's lock) and left in
   * the store: `dropHanded` takes `members` away once a record carries the messages.
   */
  async handedIn(key: ThreadKey): Promise<{ messages: TurnInput[]; members: string[] }> {
    // The thread leaves the list first: a message handed meanwhile puts it back.
    await this.state.listRemove(HANDED, key);
    const members = await this.state.listMembers(handedKey(key));
    // One per id: a message handed by two processes (a kept one both found orphaned) is answered once.
    const byId = new Map<string, TurnInput>();
    for (const m of members) {
      if (m.startsWith("{")) {
        // Handed by an earlier version, the message in the member itself.
        const { id, ...input } = JSON.parse(m) as TurnInput & { id?: string };
        byId.set(id ?? m, input);
        continue;
      }
      const input = await this.state.get<TurnInput>(handedBodyKey(key, m));
      if (input) byId.set(m, input);
    }
    const messages = [...byId.values()].sort((a, b) => (a.sentAt ?? 0) - (b.sentAt ?? 0));
    return { messages, members };
  }

  /** Takes handed messages away by their members (see `handedIn`); taking one twice is harmless. */
  async dropHanded(key: ThreadKey, members: string[]): Promise<void> {
    await Promise.all(members.map((m) => this.state.listRemove(handedKey(key), m)));
    const bodies = members.filter((m) => !m.startsWith("{")).map((m) => handedBodyKey(key, m));
    await Promise.all(bodies.map((b) => this.state.delete(b)));
  }

  /** The thread's handed messages are still to be answered (a record that was to carry them was refused). */
  async relistHanded(key: ThreadKey): Promise<void> {
    await this.state.listAdd(HANDED, key);
  }

  get(key: ThreadKey): Promise<TurnRecord | undefined> {
    return this.state.get<TurnRecord>(recordKey(key));
  }

  /** Turns whose record is still there: their process ended before they did. */
  async pending(skip?: (key: ThreadKey) => boolean): Promise<TurnRecord[]> {
    return (await this.listed(skip)).records;
  }

  /**
   * The listed turns, and the keys listed without a record (`strays`): one a record is being
   * written for right now, or left by a crash between the two writes of `open`, or by an
   * `end` whose fenced removal found the lock lost (see `unlistStray`).
   */
  async listed(skip?: (key: ThreadKey) => boolean): Promise<{ records: TurnRecord[]; strays: ThreadKey[] }> {
    const keys = (await this.state.listMembers(PENDING)).filter((key) => !skip?.(key));
    const found = await Promise.all(keys.map((key) => this.get(key)));
    const records = found.filter((r): r is TurnRecord => r !== undefined);
    return { records, strays: keys.filter((_, i) => found[i] === undefined) };
  }

  /**
   * Takes a stray key off the list, under the thread's lock (`lease`): every record is
   * written under it, so none can be on its way meanwhile, and every replica's watch would
   * otherwise read the key every round for as long as the store lives.
   */
  async unlistStray(key: ThreadKey, lease: Lease | undefined): Promise<boolean> {
    if (await this.get(key)) return false;
    if (lease) return this.state.listRemoveIfHolding(lease, PENDING, key);
    await this.state.listRemove(PENDING, key);
    return true;
  }

  private async write(record: TurnRecord): Promise<void> {
    await this.opened(record);
    await this.put(record);
  }

  private async put(record: TurnRecord): Promise<void> {
    const lease = this.leases.get(record);
    if (!lease) await this.state.set(recordKey(record.key), record);
    else if (!(await this.state.setIfHolding(lease, recordKey(record.key), record)))
      throw new LockLost(record.key);
  }
}
