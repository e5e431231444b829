import type { ChatMessage, Usage } from "../core/messages.js";
import { zeroUsage } from "../core/messages.js";
import { log } from "../log.js";
import type { Store } from "./index.js";
import { LocalThreadLock, LockLost } from "./locks.js";
import { createState, type Lease, type StateStore } from "./state.js";

export interface SessionSettings {
  model?: string;
  servers?: string[];
  /**
   * Tools someone approved "for this thread" (model-facing names): they no longer ask here,
   * whoever asks (sessions from before team scopes, Discord, the terminal).
   */
  approvedTools?: string[];
  /**
   * Tools approved "for this thread" in a Slack turn: they no longer ask the people of the
   * asker's team (`team`) only, since a Slack Connect thread also holds another organization's.
   * A field of its own rather than encoded entries of `approvedTools`: an older replica in a
   * rolling deploy ignores it, and so asks, instead of reading an entry as a tool's name.
   */
  teamApprovedTools?: Array<{ tool: string; team: string }>;
}

export interface Session {
  /** The ThreadKey. */
  key: string;
  title?: string;
  /** Rolling summary of the archived messages. */
  summary?: string;
  /** The active window; older messages live in archive records. */
  messages: ChatMessage[];
  /** Messages moved to archive records so far. */
  archivedCount: number;
  /** Number of archive records. */
  archiveChunks: number;
  usage: Usage;
  settings: SessionSettings;
  createdAt: string;
  updatedAt: string;
  turns: number;
  /** Bumped by /new so that late writes of an old turn do not resurrect it. */
  generation: number;
}

const sessionKey = (key: string) => `session:${key}`;
/** Written by reset only: the generation a thread is at, read by every save to refuse stale writes. */
const generationKey = (key: string) => `gen:${key}`;
const archiveKey = (key: string, generation: number, n: number) => `archive:${key}:${generation}:${n}`;
const BATCH = 100;

export function newSession(key: string, generation = 0, settings: SessionSettings = {}): Session {
  const now = new Date().toISOString();
  return {
    key,
    messages: [],
    archivedCount: 0,
    archiveChunks: 0,
    usage: zeroUsage(),
    settings,
    createdAt: now,
    updatedAt: now,
    turns: 0,
    generation,
  };
}

/**
 * Sessions in keyv. One save writes one record whose size is the active window, whatever
 * the thread's length: archived messages go to their own records (`archive:{key}:{gen}:{n}`),
 * written once. Writes of one key are serialised in-process so a save and a reset never interleave.
 */
export class SessionRepository {
  /** Serialized bytes this repository has written (sessions, archive chunks, index), for the benchmark. */
  bytesWritten = 0;
  private readonly writes = new LocalThreadLock();
  private state: StateStore | undefined;

  constructor(private readonly store: Store) {}

  async get(key: string): Promise<Session | undefined> {
    const [session, generation] = await this.readWithGeneration(key);
    // A reset that crashed between its two writes: the old record must stay forgotten.
    if (session && session.generation < generation) return undefined;
    return session;
  }

  /** True when the thread has a session record; reads no session body (asked for every followed message). */
  async exists(key: string): Promise<boolean> {
    return this.store.kv.has(sessionKey(key));
  }

  async getOrCreate(key: string): Promise<Session> {
    const [session, generation] = await this.readWithGeneration(key);
    if (session && session.generation >= generation) return session;
    return newSession(key, generation, session?.settings);
  }

  /**
   * Writes the session record only. A save from an older generation than the stored one is
   * dropped. With `lease` (the thread's lock, as the saver holds it) it is written only while
   * the lease is held, in the same atomic step, else `LockLost` is thrown and nothing changes:
   * a saver that stalled past its heartbeat never writes over the session of the process
   * that took the thread meanwhile.
   */
  async save(session: Session, lease?: Lease): Promise<void> {
    await this.writes.run(session.key, async () => {
      const current = (await this.store.kv.get<number>(generationKey(session.key))) ?? 0;
      if (session.generation < current) {
        // Under a lease, a /new (which takes the lock) came between only if the lease was
        // lost: the saver learns it, as from a refused write, and does not go on as if saved.
        if (lease && !(await this.states().holds(lease))) throw new LockLost(session.key);
        log.info(
          { key: session.key, generation: session.generation, current },
          "dropped a save from before /new",
        );
        return;
      }
      session.updatedAt = new Date().toISOString();
      await this.write(sessionKey(session.key), session, lease && { lease, thread: session.key });
    });
  }

  /**
   * Moves `messages` into a new archive record and counts them on `session`. With a
   * Session the caller removes them from `session.messages` and saves; with a key the
   * stored session is loaded, counted and saved here. A crash before the save leaves the
   * messages in the window and the chunk number unused, so the next archive rewrites it.
   * `lease`: fenced as `save` is, since the process that took the thread may have written
   * that chunk number already.
   */
  async archive(target: Session | string, messages: ChatMessage[], lease?: Lease): Promise<void> {
    if (messages.length === 0) return;
    const byKey = typeof target === "string";
    const session = byKey ? await this.getOrCreate(target) : target;
    const chunk = archiveKey(session.key, session.generation, session.archiveChunks);
    await this.write(chunk, messages, lease && { lease, thread: session.key });
    session.archiveChunks++;
    session.archivedCount += messages.length;
    if (byKey) await this.save(session, lease);
  }

  /** All archived messages of the thread's current generation, oldest first. */
  async readArchive(key: string): Promise<ChatMessage[]> {
    const session = await this.get(key);
    if (!session) return [];
    const out: ChatMessage[] = [];
    for (let start = 0; start < session.archiveChunks; start += BATCH) {
      const keys: string[] = [];
      for (let n = start; n < Math.min(start + BATCH, session.archiveChunks); n++) {
        keys.push(archiveKey(key, session.generation, n));
      }
      const chunks = await this.store.kv.getMany<ChatMessage[]>(keys);
      for (const chunk of chunks) if (chunk) out.push(...chunk);
    }
    return out;
  }

  /**
   * /new: a fresh session at the next generation. The thread's settings (model, servers)
   * stay: /new forgets the conversation, not how the thread is configured. `lease`: fenced
   * as `save` is; `LockLost` when the generation was refused, and then nothing changed.
   */
  async reset(key: string, lease?: Lease): Promise<Session> {
    return this.writes.run(key, async () => {
      const [old, current] = await this.readWithGeneration(key);
      const generation = Math.max(current, old?.generation ?? 0) + 1;
      const fence = lease && { lease, thread: key };
      // The generation first: from here on, any late save of the old turn is refused.
      await this.write(generationKey(key), generation, fence);
      const fresh = newSession(key, generation, old?.settings);
      // Refused after the generation landed under the lease: the thread's new holder took it
      // after that write, so it reads the older record as gone and starts afresh; the /new happened.
      await this.write(sessionKey(key), fresh, fence).catch((err: unknown) => {
        if (!(err instanceof LockLost)) throw err;
      });
      if (old && old.archiveChunks > 0) {
        const chunks = Array.from({ length: old.archiveChunks }, (_, n) =>
          archiveKey(key, old.generation, n),
        );
        await this.store.kv.deleteMany(chunks).catch((err: unknown) => {
          log.warn({ err, key }, "deleting archive records after /new failed; they are unreachable now");
        });
      }
      return fresh;
    });
  }

  private async readWithGeneration(key: string): Promise<[Session | undefined, number]> {
    const [session, generation] = (await this.store.kv.getMany<Session | number>([
      sessionKey(key),
      generationKey(key),
    ])) as [Session | undefined, number | undefined];
    return [session ?? undefined, generation ?? 0];
  }

  private async write(key: string, value: unknown, fence?: { lease: Lease; thread: string }): Promise<void> {
    this.bytesWritten += Buffer.byteLength(JSON.stringify(value));
    if (!fence) {
      await this.store.kv.set(key, value);
      return;
    }
    if (!(await this.states().kvSetIfHolding(fence.lease, key, value))) throw new LockLost(fence.thread);
  }

  private states(): StateStore {
    this.state ??= createState(this.store);
    return this.state;
  }
}
