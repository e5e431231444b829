/** A minimal async queue: producers push, one consumer awaits items in order. */
export class AsyncQueue<T> {
  private items: T[] = [];
  private waiter: (() => void) | undefined;

  push(item: T): void {
    this.items.push(item);
    this.waiter?.();
    this.waiter = undefined;
  }

  async next(): Promise<T> {
    while (this.items.length === 0) {
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
    return this.items.shift() as T;
  }
}
