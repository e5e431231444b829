/**
 * One abort listener per signal, for every item waiting with it. The signal is often
 * shared and outlives its items (an adapter's "stopping"): a listener per item meant
 * hundreds on it under a crowd, each added by walking the ones already there (and Node's
 * leak warning past ten). The listener goes with the signal's last item.
 */
export class SignalWatch<T> {
  private readonly watched = new Map<AbortSignal, { items: Set<T>; abort: () => void }>();

  /** `onAbort` is called with each item still watched with `signal` when it aborts. */
  constructor(private readonly onAbort: (item: T) => void) {}

  add(signal: AbortSignal, item: T): void {
    let watched = this.watched.get(signal);
    if (!watched) {
      const items = new Set<T>();
      const abort = () => {
        this.watched.delete(signal);
        for (const x of items) this.onAbort(x);
      };
      watched = { items, abort };
      this.watched.set(signal, watched);
      signal.addEventListener("abort", abort, { once: true });
    }
    watched.items.add(item);
  }

  /** The item no longer waits: its signal need not reach it. */
  delete(signal: AbortSignal, item: T): void {
    const watched = this.watched.get(signal);
    if (!watched?.items.delete(item) || watched.items.size > 0) return;
    signal.removeEventListener("abort", watched.abort);
    this.watched.delete(signal);
  }
}
