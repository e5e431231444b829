import type { ClaimedWrite, Claims } from "./claims.js";
import type { Lease } from "./lease-tokens.js";

/**
 * The small state interface everything that must outlive a process or be shared between
 * replicas uses, the same on every backend, so no caller branches on SQLite, Redis or
 * PostgreSQL. Values are JSON. Keys live in the store's namespace.
 */
export interface StateStore {
  get<T>(key: string): Promise<T | undefined>;
  set<T>(key: string, value: T, ttlMs?: number): Promise<void>;
  delete(key: string): Promise<void>;
  /** Writes only when the key is absent or expired; true when this call wrote it. */
  setIfAbsent<T>(key: string, value: T, ttlMs: number): Promise<boolean>;
  /**
   * Writes `value` (a string, expiring after `ttlMs`) only while `key` holds the string
   * `expected` and has not expired, in one atomic step; true when this call wrote it.
   */
  replaceIf(key: string, expected: string, value: string, ttlMs: number): Promise<boolean>;
  /**
   * The lock, or undefined when someone else holds it; it expires after `ttlMs` unless
   * extended. `owner` goes into the token, so others can tell whose lease it is.
   */
  acquireLock(key: string, ttlMs: number, owner?: string): Promise<Lease | undefined>;
  /** The lease someone holds on `key` now, if any. */
  lockHolder(key: string): Promise<Lease | undefined>;
  /** False when the lease was lost (it expired and someone else took it). */
  extendLock(lease: Lease, ttlMs: number): Promise<boolean>;
  releaseLock(lease: Lease): Promise<void>;
  /** True while `lease` is held (not released, expired or taken by someone else). */
  holds(lease: Lease): Promise<boolean>;
  /**
   * Writes `key` only while `lease` is held, in one atomic step: the fence that keeps a
   * process that lost its lock (it stalled past its heartbeat, and another took the
   * thread over) from overwriting what the new holder wrote. False when it did not write.
   */
  setIfHolding<T>(lease: Lease, key: string, value: T): Promise<boolean>;
  /**
   * `setIfHolding` for a value read through the store's keyv (`store.kv.get`: a session,
   * its archive), written as keyv writes it, without expiry.
   */
  kvSetIfHolding<T>(lease: Lease, key: string, value: T): Promise<boolean>;
  /**
   * Deletes `key` only while `lease` is held. True while it is held, also when the key was
   * already gone (nothing to delete); false only when the lease is not held.
   */
  deleteIfHolding(lease: Lease, key: string): Promise<boolean>;
  /**
   * `set` without expiry (fenced by `lease` as `setIfHolding` when given) and the `claims`
   * taken, in one atomic step; nothing at all when either is another process's.
   */
  setClaiming<T>(lease: Lease | undefined, key: string, value: T, claims: Claims): Promise<ClaimedWrite>;
  /**
   * A set of strings under one name (pending turns, waiting interactions). On SQL a list's
   * members are the rows under `list:{name}:`, so no list may be named another's name
   * followed by a colon.
   */
  listAdd(list: string, member: string): Promise<void>;
  /**
   * Adds `member` to each of `lists` in one round trip (a usage entry goes to four totals).
   * `ttlMs`: the members go once that long has passed without an addition (Redis: the
   * whole set; SQL: each member's row, at the next sweep), as a past day's totals must.
   */
  listAddEach(lists: readonly string[], member: string, ttlMs?: number): Promise<void>;
  /** `listAdd` and the `claims` taken, in one atomic step (see `setClaiming`); nothing when a claim is another's. */
  listAddClaiming(list: string, member: string, claims: Claims): Promise<ClaimedWrite>;
  listRemove(list: string, member: string): Promise<void>;
  /**
   * `listRemove` only while `lease` is held, in one atomic step; true when this call removed
   * the member. A process that lost a thread's lock must not take off a list what the new
   * holder put on it.
   */
  listRemoveIfHolding(lease: Lease, list: string, member: string): Promise<boolean>;
  listMembers(list: string): Promise<string[]>;
}
