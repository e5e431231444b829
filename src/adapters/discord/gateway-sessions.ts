import { log } from "../../log.js";
import type { Lease, StateStore } from "../../store/state.js";
import type { StoredSession } from "./gateway-backlog.js";

const LIST = "discord-gateway-sessions";
const recordKey = (id: string) => `discord-gateway-session:${id}`;
const lockKey = (id: string) => `discord-gateway:${id}`;
/** How often a session's resume point is written and its lock renewed. */
const SAVE_EVERY_MS = 1_000;
/** A session whose lock is this long without renewal belongs to a process that stopped. */
const LOCK_TTL_MS = 5_000;

interface Tracked {
  session: StoredSession;
  /** Messages dispatched and neither stored nor passed over yet, by id, with their sequence. */
  pending: Map<string, number>;
  lease?: Lease;
  /** The resume point last written. */
  saved?: number;
  /** A stopped process's session whose replayed messages this process answers. */
  adopted: boolean;
  /** Its replay is still being read: its pending messages are not all known yet. */
  reading: boolean;
  /** Its record is gone or going: a round of saving already under way must not write it back. */
  retired?: boolean;
  /** The bot's user id, from READY. */
  self?: string;
}

/** The gateway sessions kept in the store, of live processes and stopped ones alike. */
export async function storedGatewaySessions(state: StateStore): Promise<StoredSession[]> {
  const ids = await state.listMembers(LIST);
  const found = await Promise.all(ids.map((id) => state.get<StoredSession>(recordKey(id))));
  return found.filter((s): s is StoredSession => s !== undefined);
}

/** The point a session may resume from without losing a message: just before the oldest one pending. */
function resumePoint(t: Tracked): number {
  let point = t.session.sequence;
  for (const s of t.pending.values()) point = Math.min(point, s - 1);
  return point;
}

/**
 * The gateway sessions of this process, kept in the store so that a process that dies
 * (kill -9, a lost machine) leaves what another needs to resume them. Discord sends a
 * message once, to the session's socket: one received and never stored would otherwise
 * be lost, since Discord will not deliver it again. A session's stored point never passes
 * a message not yet stored, and its lock, renewed every second, says that its process
 * lives; a process that finds a lock expired adopts the session (`orphans`), reads its
 * backlog and answers what it holds.
 */
export class GatewaySessions {
  /** This process's own sessions, by shard id. */
  private readonly live = new Map<number, Tracked>();
  /** Stopped processes' sessions being answered, by session id. */
  private readonly adopted = new Map<string, Tracked>();
  private timer?: NodeJS.Timeout;
  private saving?: Promise<void>;
  private closed = false;

  constructor(private readonly state: StateStore) {}

  start(): void {
    this.timer ??= setInterval(() => void this.save(), SAVE_EVERY_MS);
    this.timer.unref();
  }

  /** A dispatch of one of the client's shards (its raw event, before discord.js handles it). */
  dispatched(shardId: number, packet: { t?: string | null; s?: number | null; d?: unknown }): void {
    if (typeof packet.s !== "number") return;
    if (packet.t === "READY") {
      const d = packet.d as {
        session_id: string;
        resume_gateway_url: string;
        shard?: [number, number];
        user?: { id?: string };
      };
      const old = this.live.get(shardId);
      // A new session: Discord no longer resumes the old one, so its record is of no use.
      if (old)
        void this.retire(old).catch((err: unknown) =>
          log.debug({ err }, "could not remove a replaced Discord gateway session from the store"),
        );
      this.live.set(shardId, {
        session: {
          sessionId: d.session_id,
          resumeURL: d.resume_gateway_url,
          sequence: packet.s,
          shardId,
          shardCount: d.shard?.[1] ?? 1,
        },
        pending: new Map(),
        adopted: false,
        reading: false,
        ...(d.user?.id ? { self: d.user.id } : {}),
      });
      void this.save();
      return;
    }
    const tracked = this.live.get(shardId);
    if (!tracked) return;
    tracked.session.sequence = Math.max(tracked.session.sequence, packet.s);
    if (packet.t !== "MESSAGE_CREATE") return;
    const d = packet.d as { id?: unknown; author?: { id?: unknown } } | null;
    // The bot's own posts ask nothing of it: none is worth a replay.
    const own = tracked.self !== undefined && d?.author?.id === tracked.self;
    if (typeof d?.id === "string" && !own) tracked.pending.set(d.id, packet.s);
  }

  /** The message is stored, answered or not for the bot: no restart needs it again. */
  settled(messageId: string): void {
    for (const t of this.live.values()) t.pending.delete(messageId);
    for (const t of this.adopted.values()) t.pending.delete(messageId);
  }

  /**
   * Stored sessions whose process stopped without closing them, each now locked to this
   * process, which must `adopt` or `drop` it.
   */
  async orphans(): Promise<StoredSession[]> {
    if (this.closed) return [];
    const ours = new Set([...this.live.values(), ...this.adopted.values()].map((t) => t.session.sessionId));
    const found: StoredSession[] = [];
    for (const id of await this.state.listMembers(LIST)) {
      // A read first: every process looks at every other's sessions every few seconds, and a write that fails is dearer.
      if (ours.has(id) || (await this.state.lockHolder(lockKey(id)))) continue;
      const lease = await this.state.acquireLock(lockKey(id), LOCK_TTL_MS);
      if (!lease) continue;
      const session = await this.state.get<StoredSession>(recordKey(id));
      if (!session) {
        await this.state.listRemove(LIST, id);
        await this.state.releaseLock(lease);
        continue;
      }
      // Renewed from now on, so that no other process adopts it too while its replay is read.
      this.adopted.set(id, {
        session,
        pending: new Map(),
        lease,
        saved: session.sequence,
        adopted: true,
        reading: true,
      });
      found.push(session);
    }
    return found;
  }

  /** The replay of an orphan: its messages are pending until each is stored or passed over. */
  adopt(sessionId: string, messages: Array<{ id: string; s: number }>, last: number): void {
    const tracked = this.adopted.get(sessionId);
    if (!tracked) return;
    for (const m of messages) tracked.pending.set(m.id, m.s);
    tracked.session.sequence = Math.max(tracked.session.sequence, last);
    tracked.reading = false;
    void this.save();
  }

  /** An orphan whose backlog is out of reach: its record goes. */
  async drop(sessionId: string): Promise<void> {
    const tracked = this.adopted.get(sessionId);
    if (tracked) await this.retire(tracked);
  }

  /**
   * This process stops, its sockets closed so that Discord keeps the sessions resumable. A
   * session whose every message is settled goes from the store; one that still holds
   * messages (they came while the process stopped, or its replay was cut short) is left
   * at its resume point, unlocked, for the next process to adopt at once.
   */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.saving;
    for (const t of [...this.live.values(), ...this.adopted.values()]) {
      // An orphan whose replay was never read is as unanswered as its process left it.
      if (t.pending.size > 0 || t.reading) {
        await this.handOver(t).catch((err: unknown) =>
          log.warn(
            { err, pending: t.pending.size },
            "could not leave an unanswered Discord gateway session to the next process; messages it received while stopping may go unanswered",
          ),
        );
        continue;
      }
      // A record left behind costs the next process one RESUME, no message: never a failed stop.
      await this.retire(t).catch((err: unknown) =>
        log.debug({ err }, "could not remove a closed Discord gateway session from the store"),
      );
    }
  }

  /** The session's record at its resume point, its lock released: the next process reads it. */
  private async handOver(t: Tracked): Promise<void> {
    const id = t.session.sessionId;
    t.retired = true;
    const lease = await this.heldLease(t);
    // Another process holds it (it adopted the session while this one stalled): theirs now.
    if (!lease) return;
    await this.state.setIfHolding(lease, recordKey(id), { ...t.session, sequence: resumePoint(t) });
    await this.state.listAdd(LIST, id);
    await this.state.releaseLock(lease);
    log.info(
      { session: id.slice(0, 8), shard: t.session.shardId, pending: t.pending.size },
      "left the messages that came while stopping to the next Discord process",
    );
  }

  /** Writes each session's resume point and renews its lock; one round at a time. */
  save(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.saving ??= this.saveAll()
      .catch((err: unknown) => log.warn({ err }, "could not keep the Discord gateway session in the store"))
      .finally(() => {
        this.saving = undefined;
      });
    return this.saving;
  }

  private async saveAll(): Promise<void> {
    for (const t of [...this.live.values(), ...this.adopted.values()]) {
      if (t.retired) continue;
      if (t.adopted && !t.reading && t.pending.size === 0) {
        await this.retire(t);
        continue;
      }
      const id = t.session.sessionId;
      if (t.lease && !(await this.state.extendLock(t.lease, LOCK_TTL_MS))) {
        // Taken by a process that found this one silent (it stalled past the lock's life).
        t.lease = undefined;
        t.saved = undefined;
        if (t.adopted) this.adopted.delete(id);
        continue;
      }
      if (!t.lease) {
        t.lease = await this.state.acquireLock(lockKey(id), LOCK_TTL_MS);
        if (!t.lease) continue;
        await this.state.listAdd(LIST, id);
      }
      const point = resumePoint(t);
      if (point === t.saved) continue;
      if (await this.state.setIfHolding(t.lease, recordKey(id), { ...t.session, sequence: point })) {
        t.saved = point;
      }
    }
  }

  private async retire(t: Tracked): Promise<void> {
    const id = t.session.sessionId;
    t.retired = true;
    if (this.live.get(t.session.shardId) === t) this.live.delete(t.session.shardId);
    if (this.adopted.get(id) === t) this.adopted.delete(id);
    const lease = await this.heldLease(t);
    // Another process holds it (it adopted the session while this one stalled): theirs now.
    if (!lease) return;
    await this.state.deleteIfHolding(lease, recordKey(id));
    await this.state.listRemove(LIST, id);
    await this.state.releaseLock(lease);
  }

  /** The session's lock, still this process's or free and taken now; none when another process took it. */
  private async heldLease(t: Tracked): Promise<Lease | undefined> {
    const held = t.lease && (await this.state.extendLock(t.lease, LOCK_TTL_MS)) ? t.lease : undefined;
    t.lease = undefined;
    return held ?? (await this.state.acquireLock(lockKey(t.session.sessionId), LOCK_TTL_MS));
  }
}
