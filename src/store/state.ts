import type { Store } from "./index.js";
import { RedisState } from "./redis-state.js";
import { SqlState } from "./sql-state.js";
import type { StateStore } from "./state-store.js";

export { type Lease, leaseOwner } from "./lease-tokens.js";
export type { StateStore } from "./state-store.js";

/** The state store for `store`'s backend (see `StateStore`). */
export function createState(store: Store): StateStore {
  if (store.redis) return new RedisState(store, store.redis);
  if (store.sql) return new SqlState(store, store.sql);
  throw new Error(`No state implementation for a ${store.kind} store`);
}
