import type { Platform, ThreadKey } from "../core/thread.js";
import type { Store } from "./index.js";
import { createState, type StateStore } from "./state.js";

/** One call waiting for a person's decision, found again by the ref its buttons carry. */
export interface ApprovalRecord {
  ref: string;
  key: ThreadKey;
  callId: string;
  server: string;
  tool: string;
  arguments: Record<string, unknown>;
  /** Who asked the bot: they may always decide. */
  asker: { id: string; name?: string };
  platform: Platform;
  /** The channel the thread is in (for per-channel approvers). */
  channel: string;
  askedAt: string;
  expiresAt: string;
  /** The question's message, once it is posted. */
  messageId?: string;
  /** The channel the question is in, when the thread key does not say it (see ReplyAddress). */
  where?: string;
}

/** `unasked`: the question could not be posted, so nobody could decide. */
export type DecisionKind = "approve" | "approve_thread" | "deny" | "expire" | "supersede" | "unasked";

export interface Decision {
  kind: DecisionKind;
  by?: { id: string; name?: string };
  at: string;
}

const recordKey = (ref: string) => `approval:${ref}`;
const decisionKey = (ref: string) => `approval-decision:${ref}`;

/** Kept a week past their expiry, so that a late click is told it expired rather than "unknown". */
const KEEP_MS = 7 * 24 * 3600_000;

/**
 * Approval questions and their decisions. A decision is taken with set-if-absent, so the
 * first click wins everywhere (double clicks, two replicas, a click racing the expiry) and
 * a call never gets two.
 */
export class ApprovalBook {
  private readonly state: StateStore;

  constructor(store: Store) {
    this.state = createState(store);
  }

  async open(record: ApprovalRecord): Promise<void> {
    await this.state.set(recordKey(record.ref), record, this.ttl(record));
  }

  get(ref: string): Promise<ApprovalRecord | undefined> {
    return this.state.get<ApprovalRecord>(recordKey(ref));
  }

  /** Takes the decision if none was taken; false when another came first. */
  decide(record: ApprovalRecord, decision: Decision): Promise<boolean> {
    return this.state.setIfAbsent(decisionKey(record.ref), decision, this.ttl(record));
  }

  decision(ref: string): Promise<Decision | undefined> {
    return this.state.get<Decision>(decisionKey(ref));
  }

  private ttl(record: ApprovalRecord): number {
    return Math.max(0, Date.parse(record.expiresAt) - Date.now()) + KEEP_MS;
  }
}
