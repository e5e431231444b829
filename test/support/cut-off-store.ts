import type { Store } from "../../src/store/index.js";
import type { StateStore } from "../../src/store/state.js";

/**
 * One process's way to its store, which a test can cut (a network partition between that
 * replica and Redis or PostgreSQL, while it still reaches Slack or Discord). A call made
 * while cut off waits until the way is back, then fails without having reached the store,
 * as a request on a connection that broke is never answered; a call made before or after
 * goes through. The other processes on the same store see nothing of it.
 *
 * `late`: a call made while cut off is held instead, and goes through once the way is
 * back, in the order they were made, as node-redis sends the commands it queued while it
 * reconnected: a write lands long after the process made it.
 */
export class StoreLink {
  private down: { back: Promise<void>; restore: () => void } | undefined;
  /** Calls refused (or held) so far, to tell that the process did try to reach its store. */
  refused = 0;
  private readonly late: boolean;

  constructor(opts: { late?: boolean } = {}) {
    this.late = opts.late ?? false;
  }

  get cut(): boolean {
    return this.down !== undefined;
  }

  cutOff(): void {
    if (this.down) return;
    let restore!: () => void;
    const back = new Promise<void>((r) => {
      restore = r;
    });
    this.down = { back, restore };
  }

  restore(): void {
    this.down?.restore();
    this.down = undefined;
  }

  /** `state` as this process reaches it. */
  state(state: StateStore): StateStore {
    return this.gated(state);
  }

  /** `store` as this process reaches it: its key-value calls and its SQL. */
  store(store: Store): Store {
    return {
      ...store,
      kv: this.gated(store.kv),
      ...(store.sql ? { sql: this.gated(store.sql) } : {}),
      ping: () => this.through(() => store.ping()),
      close: () => store.close(),
    };
  }

  private gated<T extends object>(target: T): T {
    return new Proxy(target, {
      get: (t, prop) => {
        const value = Reflect.get(t, prop, t);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => this.through(() => value.apply(t, args));
      },
    });
  }

  private through<R>(call: () => R): R | Promise<Awaited<R>> {
    const down = this.down;
    if (!down) return call();
    this.refused++;
    if (this.late) return down.back.then(call) as Promise<Awaited<R>>;
    return down.back.then(() => {
      throw new Error("the store is unreachable from this process (connection reset)");
    });
  }
}
