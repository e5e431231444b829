import type { FormField, FormValues } from "../core/forms.js";
import type { Platform, ThreadKey } from "../core/thread.js";
import type { Store } from "./index.js";
import { createState, type StateStore } from "./state.js";

/** A question a server asked through a tool call (MCP elicitation), found again by the ref its buttons carry. */
export interface FormRecord {
  ref: string;
  key: ThreadKey;
  server: string;
  mode: "form" | "url";
  message: string;
  fields?: FormField[];
  url?: string;
  /** URL mode: only the end of the flow (the server's notice, or Done) answers it, not a click on the link. */
  mustComplete?: boolean;
  /** URL mode: the link signs the asker in as themselves, so it is shown to them alone (a button reveals it). */
  private?: boolean;
  /** Who asked the bot: the only one who may answer. */
  asker: { id: string; name?: string };
  platform: Platform;
  channel: string;
  askedAt: string;
  expiresAt: string;
  messageId?: string;
  /** The channel the question is in, when the thread key does not say it. */
  where?: string;
}

export type FormEnd = "answered" | "timeout" | "ended" | "completed";

export interface FormAnswer {
  action: "accept" | "decline" | "cancel";
  content?: Record<string, string | number | boolean | string[]>;
  by?: { id: string; name?: string };
  /** How it ended, when not by a person's choice alone. */
  end?: FormEnd;
  at: string;
}

/** What is known of a form shown in parts: the parts checked so far, and what was typed last. */
export interface FormDraft {
  /** The parts (0-based) submitted and checked. */
  parts: number[];
  accepted: Record<string, string | number | boolean | string[]>;
  typed: FormValues;
}

const recordKey = (ref: string) => `form:${ref}`;
const answerKey = (ref: string) => `form-answer:${ref}`;
const draftKey = (ref: string) => `form-draft:${ref}`;
const liveKey = (ref: string) => `form-live:${ref}`;

/** Kept a day past their expiry, so that a late click is told it is over rather than "unknown". */
const KEEP_MS = 24 * 3600_000;

/**
 * Forms and their answers, shared by every replica: the click that opens a form and the
 * submission may reach any of them, while the tool call that waits runs in one process,
 * which keeps `live` fresh and reads the answer. An answer is taken with set-if-absent, so
 * the first one wins (a double submit, a submit racing the timeout).
 */
export class FormBook {
  private readonly state: StateStore;

  constructor(store: Store) {
    this.state = createState(store);
  }

  open(record: FormRecord): Promise<void> {
    return this.state.set(recordKey(record.ref), record, this.ttl(record));
  }

  get(ref: string): Promise<FormRecord | undefined> {
    return this.state.get<FormRecord>(recordKey(ref));
  }

  answer(record: FormRecord, answer: FormAnswer): Promise<boolean> {
    return this.state.setIfAbsent(answerKey(record.ref), answer, this.ttl(record));
  }

  answered(ref: string): Promise<FormAnswer | undefined> {
    return this.state.get<FormAnswer>(answerKey(ref));
  }

  draft(ref: string): Promise<FormDraft | undefined> {
    return this.state.get<FormDraft>(draftKey(ref));
  }

  saveDraft(record: FormRecord, draft: FormDraft): Promise<void> {
    return this.state.set(draftKey(record.ref), draft, this.ttl(record));
  }

  /** Marks the form as waiting in a live process for `ms` more. */
  keepAlive(ref: string, ms: number): Promise<void> {
    return this.state.set(liveKey(ref), true, ms);
  }

  async live(ref: string): Promise<boolean> {
    return (await this.state.get<boolean>(liveKey(ref))) === true;
  }

  async done(ref: string): Promise<void> {
    await Promise.all([this.state.delete(liveKey(ref)), this.state.delete(draftKey(ref))]);
  }

  private ttl(record: FormRecord): number {
    return Math.max(0, Date.parse(record.expiresAt) - Date.now()) + KEEP_MS;
  }
}
