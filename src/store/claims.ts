/**
 * A record written together with the claims of the message it stores, in one atomic step
 * (see `StateStore.setClaiming`): a process killed at any moment leaves either both or
 * neither, so a message is never held without being stored (its redelivery would be
 * refused, and nobody would answer it) nor stored without being held (its redelivery
 * would be answered beside the record's takeover).
 */
export interface Claims {
  keys: readonly string[];
  /** What a claim may hold for the write to go ahead: this process's own values. Missing or expired ones are taken afresh. */
  mine: readonly string[];
  /** What each claim holds afterwards, for `ttlMs`. */
  value: string;
  ttlMs: number;
}

/** Written; refused for the lease (another process has the thread); refused for a claim (another process has the message). */
export type ClaimedWrite = "written" | "lease" | "claim";

/**
 * KEYS: the record, the lease (the record again when unfenced), the claims. ARGV: the
 * record's value (a set's member for "sadd"), the lease's token ("" when unfenced), the
 * claims' value, their expiry, the command that writes the record ("set" or "sadd"),
 * then the values a claim may hold. Returns 0 written, 1 refused for the lease, 2 for a claim.
 */
export const SET_CLAIMING = `
if ARGV[2] ~= "" and redis.call("get", KEYS[2]) ~= ARGV[2] then return 1 end
for i = 3, #KEYS do
  local now = redis.call("get", KEYS[i])
  if now then
    local mine = false
    for j = 6, #ARGV do if now == ARGV[j] then mine = true end end
    if not mine then return 2 end
  end
end
redis.call(ARGV[5], KEYS[1], ARGV[1])
for i = 3, #KEYS do redis.call("set", KEYS[i], ARGV[3], "PX", ARGV[4]) end
return 0`;

export const CLAIMED_WRITES: readonly ClaimedWrite[] = ["written", "lease", "claim"];

/** The claims' keys once each: PostgreSQL refuses an upsert that touches one row twice. */
export function distinctKeys(claims: Claims): string[] {
  return [...new Set(claims.keys)];
}
