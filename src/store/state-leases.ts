import type { ClaimedWrite, Claims } from "./claims.js";
import { type Lease, lockKey, newLease } from "./lease-tokens.js";
import type { StateStore } from "./state-store.js";

/** A lease is a set-if-absent of its token, so every backend takes and reads leases the same way. */
export abstract class Leases implements StateStore {
  abstract get<T>(key: string): Promise<T | undefined>;
  abstract set<T>(key: string, value: T, ttlMs?: number): Promise<void>;
  abstract delete(key: string): Promise<void>;
  abstract setIfAbsent<T>(key: string, value: T, ttlMs: number): Promise<boolean>;
  abstract replaceIf(key: string, expected: string, value: string, ttlMs: number): Promise<boolean>;
  abstract extendLock(lease: Lease, ttlMs: number): Promise<boolean>;
  abstract releaseLock(lease: Lease): Promise<void>;
  abstract setIfHolding<T>(lease: Lease, key: string, value: T): Promise<boolean>;
  abstract kvSetIfHolding<T>(lease: Lease, key: string, value: T): Promise<boolean>;
  abstract deleteIfHolding(lease: Lease, key: string): Promise<boolean>;
  abstract setClaiming<T>(
    lease: Lease | undefined,
    key: string,
    value: T,
    claims: Claims,
  ): Promise<ClaimedWrite>;
  abstract listAdd(list: string, member: string): Promise<void>;
  abstract listAddClaiming(list: string, member: string, claims: Claims): Promise<ClaimedWrite>;
  abstract listAddEach(lists: readonly string[], member: string): Promise<void>;
  abstract listRemove(list: string, member: string): Promise<void>;
  abstract listRemoveIfHolding(lease: Lease, list: string, member: string): Promise<boolean>;
  abstract listMembers(list: string): Promise<string[]>;

  async acquireLock(key: string, ttlMs: number, owner?: string): Promise<Lease | undefined> {
    const lease = newLease(key, owner);
    return (await this.setIfAbsent(lease.key, lease.token, ttlMs)) ? lease : undefined;
  }

  async lockHolder(key: string): Promise<Lease | undefined> {
    const token = await this.get<string>(lockKey(key));
    return token === undefined ? undefined : { key: lockKey(key), token };
  }

  async holds(lease: Lease): Promise<boolean> {
    return (await this.get<string>(lease.key)) === lease.token;
  }
}
