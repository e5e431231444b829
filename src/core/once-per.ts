/**
 * Says yes to a key once per window: a sentence a person should read once an hour, not
 * on each of their messages. Bounded: past `max` keys the expired ones go, and if none
 * has, all of them (a window's memory is not worth a process's).
 */
export class OncePer {
  private readonly last = new Map<string, number>();

  constructor(
    private readonly windowMs: number,
    private readonly max = 10_000,
  ) {}

  /** True the first time `key` comes within a window, false until the window has passed. */
  first(key: string, now = Date.now()): boolean {
    const at = this.last.get(key);
    if (at !== undefined && now - at < this.windowMs) return false;
    if (this.last.size >= this.max) {
      for (const [k, t] of this.last) if (now - t >= this.windowMs) this.last.delete(k);
      if (this.last.size >= this.max) this.last.clear();
    }
    this.last.set(key, now);
    return true;
  }
}
