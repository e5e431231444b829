import { randomUUID } from "node:crypto";
/** Lease tokens and the Redis scripts that compare them: the pieces every backend's leases share. */

/** A held lock: only the holder of its token can extend or release it. */
export interface Lease {
  key: string;
  token: string;
}

export const lockKey = (key: string) => `lock:${key}`;

/** A fresh lease token; `{owner}/{random}` when the holder names itself. */
export function newLease(key: string, owner?: string): Lease {
  return { key: lockKey(key), token: owner ? `${owner}/${randomUUID()}` : randomUUID() };
}

/** The owner a lease token names, if it names one. */
export function leaseOwner(lease: Lease): string | undefined {
  const slash = lease.token.indexOf("/");
  return slash > 0 ? lease.token.slice(0, slash) : undefined;
}

export const SET_IF_HOLDING = `if redis.call("get", KEYS[1]) == ARGV[1] then redis.call("set", KEYS[2], ARGV[2]) return 1 else return 0 end`;
export const DELETE_IF_HOLDING = `if redis.call("get", KEYS[1]) == ARGV[1] then redis.call("del", KEYS[2]) return 1 else return 0 end`;
export const SREM_IF_HOLDING = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("srem", KEYS[2], ARGV[2]) else return 0 end`;
export const REPLACE_IF = `if redis.call("get", KEYS[1]) == ARGV[1] then redis.call("set", KEYS[1], ARGV[2], "PX", ARGV[3]) return 1 else return 0 end`;
export const RELEASE = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;
export const EXTEND = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`;
