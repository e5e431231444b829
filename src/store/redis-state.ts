import { CLAIMED_WRITES, type ClaimedWrite, type Claims, distinctKeys, SET_CLAIMING } from "./claims.js";
import type { RedisClient, Store } from "./index.js";
import type { Lease } from "./lease-tokens.js";
import * as lua from "./lease-tokens.js";
import { Leases } from "./state-leases.js";

/** JSON strings under `{namespace}:{key}`, with Redis's own expiry and atomic commands. */
export class RedisState extends Leases {
  constructor(
    private readonly store: Store,
    private readonly redis: RedisClient,
  ) {
    super();
  }

  private raw(key: string): string {
    return `${this.store.namespace}:${key}`;
  }

  async get<T>(key: string): Promise<T | undefined> {
    const text = await this.redis.get(this.raw(key));
    return text === null ? undefined : (JSON.parse(text) as T);
  }

  async set<T>(key: string, value: T, ttlMs?: number): Promise<void> {
    const text = JSON.stringify(value);
    if (ttlMs) await this.redis.set(this.raw(key), text, { expiration: { type: "PX", value: ttlMs } });
    else await this.redis.set(this.raw(key), text);
  }

  async delete(key: string): Promise<void> {
    await this.redis.del(this.raw(key));
  }

  async setIfAbsent<T>(key: string, value: T, ttlMs: number): Promise<boolean> {
    const ok = await this.redis.set(this.raw(key), JSON.stringify(value), {
      condition: "NX",
      expiration: { type: "PX", value: ttlMs },
    });
    return ok === "OK";
  }

  async replaceIf(key: string, expected: string, value: string, ttlMs: number): Promise<boolean> {
    const wrote = await this.redis.eval(lua.REPLACE_IF, {
      keys: [this.raw(key)],
      arguments: [JSON.stringify(expected), JSON.stringify(value), String(ttlMs)],
    });
    return wrote === 1;
  }

  async extendLock(lease: Lease, ttlMs: number): Promise<boolean> {
    const kept = await this.redis.eval(lua.EXTEND, {
      keys: [this.raw(lease.key)],
      arguments: [JSON.stringify(lease.token), String(ttlMs)],
    });
    return kept === 1;
  }

  async releaseLock(lease: Lease): Promise<void> {
    await this.redis.eval(lua.RELEASE, {
      keys: [this.raw(lease.key)],
      arguments: [JSON.stringify(lease.token)],
    });
  }

  async setIfHolding<T>(lease: Lease, key: string, value: T): Promise<boolean> {
    const wrote = await this.redis.eval(lua.SET_IF_HOLDING, {
      keys: [this.raw(lease.key), this.raw(key)],
      arguments: [JSON.stringify(lease.token), JSON.stringify(value)],
    });
    return wrote === 1;
  }

  /** Keyv's envelope under @keyv/redis's own key, which the adapter prefixes with `ns::` (see openRedis). */
  async kvSetIfHolding<T>(lease: Lease, key: string, value: T): Promise<boolean> {
    const wrote = await this.redis.eval(lua.SET_IF_HOLDING, {
      keys: [this.raw(lease.key), `${this.store.namespace}::${key}`],
      arguments: [JSON.stringify(lease.token), JSON.stringify({ value })],
    });
    return wrote === 1;
  }

  async deleteIfHolding(lease: Lease, key: string): Promise<boolean> {
    const deleted = await this.redis.eval(lua.DELETE_IF_HOLDING, {
      keys: [this.raw(lease.key), this.raw(key)],
      arguments: [JSON.stringify(lease.token)],
    });
    return deleted === 1;
  }

  setClaiming<T>(lease: Lease | undefined, key: string, value: T, claims: Claims): Promise<ClaimedWrite> {
    return this.claiming(this.raw(key), lease, "set", JSON.stringify(value), claims);
  }

  listAddClaiming(list: string, member: string, claims: Claims): Promise<ClaimedWrite> {
    return this.claiming(this.raw(list), undefined, "sadd", member, claims);
  }

  private async claiming(
    target: string,
    lease: Lease | undefined,
    command: "set" | "sadd",
    value: string,
    claims: Claims,
  ): Promise<ClaimedWrite> {
    const outcome = await this.redis.eval(SET_CLAIMING, {
      keys: [target, lease ? this.raw(lease.key) : target, ...distinctKeys(claims).map((k) => this.raw(k))],
      arguments: [
        value,
        lease ? JSON.stringify(lease.token) : "",
        JSON.stringify(claims.value),
        String(claims.ttlMs),
        command,
        ...claims.mine.map((v) => JSON.stringify(v)),
      ],
    });
    return CLAIMED_WRITES[Number(outcome)] ?? "claim";
  }

  async listAdd(list: string, member: string): Promise<void> {
    await this.redis.sAdd(this.raw(list), member);
  }

  async listAddEach(lists: readonly string[], member: string, ttlMs?: number): Promise<void> {
    const batch = this.redis.multi();
    for (const list of lists) {
      batch.sAdd(this.raw(list), member);
      if (ttlMs) batch.pExpire(this.raw(list), ttlMs);
    }
    await batch.exec();
  }

  async listRemove(list: string, member: string): Promise<void> {
    await this.redis.sRem(this.raw(list), member);
  }

  async listRemoveIfHolding(lease: Lease, list: string, member: string): Promise<boolean> {
    const removed = await this.redis.eval(lua.SREM_IF_HOLDING, {
      keys: [this.raw(lease.key), this.raw(list)],
      arguments: [JSON.stringify(lease.token), member],
    });
    return removed === 1;
  }

  async listMembers(list: string): Promise<string[]> {
    return this.redis.sMembers(this.raw(list));
  }
}
