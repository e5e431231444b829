import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { callTools, FunctionHub, say } from "../../test/support/scripted.js";
import { Agent } from "../agent/agent.js";
import type { ModelEvent, ModelRequest, Provider } from "../agent/providers/provider.js";
import { configSchema } from "../config.js";
import type { ResumeFrom } from "../core/replies.js";
import type { ToolEntry } from "../mcp/types.js";
import { ApprovalBook } from "../store/approvals.js";
import { MemoryDedupe } from "../store/dedupe.js";
import { openStore, type Store } from "../store/index.js";
import { LocalThreadLock, type ThreadLock } from "../store/locks.js";
import { SessionRepository } from "../store/sessions.js";
import { TurnLedger, type TurnRecord } from "../store/turns.js";
import { UsageLedger } from "../store/usage.js";
import { WaitingMessages } from "../store/waiting-messages.js";
import { Budgets } from "./budgets.js";
import type { Adapter, Inbound, Interaction, Question, Reply } from "./contract.js";
import { Dispatcher } from "./dispatcher.js";
import type { TurnObserver } from "./turn-log.js";

/* What the takeover tests share: one thread of Alice's, a store, and dispatchers on it. */

export const KEY = "slack:T1:C1:1712345678.000100";
export const ALICE = { id: "U1", name: "alice" };

/** fs__read says it is read-only; fs__write says nothing, so it is not run twice. */
export class HintedHub extends FunctionHub {
  override tools(): ToolEntry[] {
    return super.tools().map((t) => (t.tool === "read" ? { ...t, annotations: { readOnlyHint: true } } : t));
  }
}

/** A platform that records what a rebuilt reply shows and where it was asked to write. */
export function fakeSlack() {
  const seen: string[] = [];
  const rebuilt: ResumeFrom[] = [];
  const notes: string[] = [];
  const marks: string[] = [];
  const reply: Reply = {
    status: async () => undefined,
    stream: () => ({
      write: (d) => void seen.push(d),
      finish: async () => void seen.push("<finish>"),
      fail: async (m) => void seen.push(`<fail:${m}>`),
      abandon: async () => void seen.push("<abandon>"),
    }),
    upload: async () => undefined,
    title: async () => undefined,
    notice: async (t) => void seen.push(`<notice:${t}>`),
  };
  const adapter: Adapter = {
    platform: "slack",
    start: async () => undefined,
    stop: async () => undefined,
    ready: () => true,
    replyFor: (_key, from) => {
      rebuilt.push(from);
      return reply;
    },
    recover: async (_key, _address, note) => void notes.push(note),
    unmark: async (_key, mark) => void marks.push(mark),
  };
  return { adapter, seen, rebuilt, notes, marks, reply };
}

/** Alice's message `text` in the thread, answered in `reply`. */
export function aliceSays(id: string, text: string, reply: Reply): Inbound {
  return { id, key: KEY, platform: "slack", channel: "C1", user: ALICE, text, attachments: [], reply };
}

/** Writes a.txt when asked to, says what the tool answered, and otherwise what it was asked. */
export const byText: Provider = {
  name: "openai",
  listModels: async () => [],
  async *stream(req: ModelRequest): AsyncIterable<ModelEvent> {
    const last = req.messages.at(-1);
    if (last?.role === "tool") yield* say("Written.");
    else if (last?.content === "write a.txt") yield* callTools(["fs__write", { path: "a.txt" }]);
    else yield* say(`You asked: ${last?.content}`);
  },
};

/** Alice's Approve on `question`, posted as message `messageId`. */
export function approve(question: Question, messageId: string): Interaction {
  return {
    id: `click-${question.ref}`,
    kind: "button",
    ref: question.ref,
    value: "approve",
    platform: "slack",
    user: ALICE,
    messageId,
    respond: async () => undefined,
  };
}

export interface SetupOptions {
  lock?: ThreadLock;
  usage?: unknown;
  hub?: FunctionHub;
  /** The bed's store as this dispatcher's process reaches it (see test/support/cut-off-store.ts). */
  store?: Store;
  /** The tools' annotations decide what asks first (fs__write does); by default nothing asks. */
  asks?: boolean;
  /** Messages waiting for the thread are kept in the store (see WaitingMessages), as the app keeps them. */
  waiting?: boolean;
  observer?: TurnObserver;
}

/** A store in a temporary folder, with the thread already titled, and the dispatchers made on it. */
export class TakeoverBed {
  private readonly running: Dispatcher[] = [];

  private constructor(
    private readonly dir: string,
    readonly store: Store,
    readonly sessions: SessionRepository,
    readonly ledger: TurnLedger,
  ) {}

  static async open(): Promise<TakeoverBed> {
    const dir = mkdtempSync(join(tmpdir(), "sb-takeover-"));
    const store = await openStore(`sqlite://${join(dir, "s.sqlite")}`);
    const sessions = new SessionRepository(store);
    // Titled already: no title request follows the answers these tests count requests of.
    await sessions.save({ ...(await sessions.getOrCreate(KEY)), title: "Titled" });
    return new TakeoverBed(dir, store, sessions, new TurnLedger(store));
  }

  async close(): Promise<void> {
    await Promise.all(this.running.splice(0).map((d) => d.drain(0)));
    await this.store.close().catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** A dispatcher whose tools run without asking (unless `asks`). */
  setup = (provider: Provider, opts: SetupOptions = {}) => {
    const { lock = new LocalThreadLock(), usage } = opts;
    const store = opts.store ?? this.store;
    const sessions = opts.store ? new SessionRepository(store) : this.sessions;
    const ledger = opts.store ? new TurnLedger(store) : this.ledger;
    const hub = opts.hub ?? new HintedHub({ fs__write: () => "written", fs__read: () => "the file says hi" });
    const config = configSchema.parse({
      approvals: { rules: opts.asks ? [] : [{ server: "*", mode: "always" }] },
      ...(usage ? { usage } : {}),
    });
    const agent = new Agent({ config, hub, providerFor: () => provider, sessions });
    const dispatcher = new Dispatcher({
      agent,
      sessions,
      ledger,
      ...(opts.waiting ? { waiting: new WaitingMessages(store, ledger) } : {}),
      lock,
      dedupe: new MemoryDedupe(),
      approvals: new ApprovalBook(store),
      hub,
      config,
      ...(usage ? { budgets: new Budgets(config, new UsageLedger(store)) } : {}),
      ...(opts.observer ? { observer: opts.observer } : {}),
    });
    this.running.push(dispatcher);
    return { dispatcher, hub, lock, ledger };
  };

  /** A turn as a process left it: begun by `owner`, with what `extra` says it got to. */
  leftBy = async (owner: string, extra: Partial<TurnRecord> = {}): Promise<TurnRecord> => {
    const record = await this.ledger.begin(KEY, {
      id: "turn-1",
      owner,
      input: { text: "write the file, then read it", user: ALICE, channel: "C1" },
    });
    Object.assign(record, extra);
    await this.ledger.checkpoint(record, extra.shown ?? "");
    if (extra.calling) await this.ledger.calling(record, extra.calling);
    return record;
  };

  /** The question of `leftBy`'s turn, saved in the session as its process asked it. */
  askedAlready = async (): Promise<void> => {
    const session = await this.sessions.getOrCreate(KEY);
    session.messages.push({ role: "user", content: "write the file, then read it", turn: "turn-1" });
    await this.sessions.save(session);
  };
}
