import type { PendingStep } from "../core/messages.js";
import type { ReplyAddress } from "../core/replies.js";
import type { ThreadKey } from "../core/thread.js";
import type { Store } from "./index.js";
import { createState, type StateStore } from "./state.js";

/** A turn that is writing its reply: what a restart or another replica needs to finish it. */
export interface TurnRecord {
  key: ThreadKey;
  startedAt: string;
  /** Where the reply's messages are, once the first one is on the platform. */
  address?: ReplyAddress;
  /** Set while the turn waits for approvals: no process runs it until they are decided. */
  waiting?: WaitingTurn;
}

export interface WaitingTurn {
  step: PendingStep;
  /** The approval ref of each call that waits, by call id. */
  refs: Record<string, string>;
  /** The earliest expiry among them: the turn goes on then at the latest. */
  expiresAt: string;
  user: { id: string; name?: string };
  channel: string;
}

const recordKey = (key: ThreadKey) => `turn:${key}`;
const PENDING = "turns";

/**
 * The turns in flight, one record each beside the session (so recording where a reply is
 * never rewrites the conversation), and a list of their keys to find them at start-up.
 * The list gains a key before its record is written and loses it after the record is
 * deleted: after a crash it may name a key too many (`pending` filters), never too few.
 */
export class TurnLedger {
  private readonly state: StateStore;

  constructor(store: Store) {
    this.state = createState(store);
  }

  async begin(key: ThreadKey): Promise<TurnRecord> {
    const record: TurnRecord = { key, startedAt: new Date().toISOString() };
    await this.state.listAdd(PENDING, key);
    await this.write(record);
    return record;
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

  /** The turn goes on (its step's calls run now): a crash from here on ends it, never runs them again. */
  async unpark(record: TurnRecord): Promise<void> {
    delete record.waiting;
    await this.write(record);
  }

  async end(key: ThreadKey): Promise<void> {
    await this.state.delete(recordKey(key));
    await this.state.listRemove(PENDING, key);
  }

  get(key: ThreadKey): Promise<TurnRecord | undefined> {
    return this.state.get<TurnRecord>(recordKey(key));
  }

  /** Turns whose record is still there: their process ended before they did. */
  async pending(): Promise<TurnRecord[]> {
    const keys = await this.state.listMembers(PENDING);
    const records = await Promise.all(keys.map((key) => this.get(key)));
    return records.filter((r): r is TurnRecord => r !== undefined);
  }

  private async write(record: TurnRecord): Promise<void> {
    await this.state.set(recordKey(record.key), record);
  }
}
