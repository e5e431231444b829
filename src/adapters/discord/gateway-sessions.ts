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
      const d = packet.d as { session_id: string; resume_gateway_url: string; shard?: [number, number] };
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
      });
      void this.save();
      return;
    }
    const tracked = this.live.get(shardId);
    if (!tracked) return;
    tracked.session.sequence = Math.max(tracked.session.sequence, packet.s);
    const id = (packet.d as { id?: unknown } | null)?.id;
    if (packet.t === "MESSAGE_CREATE" && typeof id === "string") tracked.pending.set(id, packet.s);
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
      if (ours.has(id)) continue;
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

  /** This process closes its sessions (a normal close ends them on Discord): nothing to resume. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.saving;
    for (const t of [...this.live.values(), ...this.adopted.values()]) {
      // A record left behind costs the next process one refused RESUME, no message: never a failed stop.
      await this.retire(t).catch((err: unknown) =>
        log.debug({ err }, "could not remove a closed Discord gateway session from the store"),
      );
    }
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
    const held = t.lease && (await this.state.extendLock(t.lease, LOCK_TTL_MS)) ? t.lease : undefined;
    t.lease = undefined;
    const lease = held ?? (await this.state.acquireLock(lockKey(id), LOCK_TTL_MS));
    // Another process holds it (it adopted the session while this one stalled): theirs now.
    if (!lease) return;
    await this.state.deleteIfHolding(lease, recordKey(id));
    await this.state.listRemove(LIST, id);
    await this.state.releaseLock(lease);
  }
}
