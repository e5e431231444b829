import { AsyncLocalStorage } from "node:async_hooks";

/*
 * One AsyncLocalStorage for the whole process. Every one that is enabled copies its store
 * onto each new promise, and a streamed answer makes thousands: measured on Node 20, a
 * second store makes each await ~150 ns dearer and a third ~50 ns more. So the turn's
 * payer, the write scheduler's lane and OpenTelemetry's context are slots of one frame.
 */
type Frame = Readonly<Record<symbol, unknown>>;

const storage = new AsyncLocalStorage<Frame>();

/** A value that follows the work it was set for across awaits, like an AsyncLocalStorage of its own. */
export class ContextSlot<T> {
  private readonly key: symbol;

  constructor(name: string) {
    this.key = Symbol(name);
  }

  get(): T | undefined {
    return storage.getStore()?.[this.key] as T | undefined;
  }

  /** Runs `fn` with this slot set to `value`; the other slots keep theirs. */
  run<R>(value: T, fn: () => R): R {
    return storage.run({ ...storage.getStore(), [this.key]: value }, fn);
  }
}
