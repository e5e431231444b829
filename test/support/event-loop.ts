import { performance } from "node:perf_hooks";

/** Keeps the thread busy for `ms`, as work between two awaits does (a store's queries, a long GC pause). */
export function blockFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spinning on purpose
  }
}

/** Counts turns of the event loop from now on: a timer of 0 ms, armed again each time it runs, until stopped. */
export class TurnCounter {
  count = 0;
  private counting = true;

  constructor() {
    const tick = () => {
      this.count += 1;
      if (this.counting) setTimeout(tick, 0);
    };
    setTimeout(tick, 0);
  }

  stop(): void {
    this.counting = false;
  }
}
