/**
 * What a bot writes to an emulated platform, as the platform sees it: every successful
 * write call, logged as it is answered (a hook on the emulator, no polling), so that the
 * clock stops exactly when a bot's first message appears or when its answer's text is
 * complete on the platform, whatever else the bot does before or after.
 */

export interface WriteEvent {
  /** The conversation: Slack "channel:thread_ts", Discord the thread's channel id. */
  thread: string;
  /** The message written, for message writes. */
  message?: string;
  at: number;
  kind: "create" | "edit" | "delete" | "other";
  method: string;
}

interface Waiter {
  thread: string;
  check(): boolean;
}

/** Text without whitespace: splits and renderers may move spaces and line breaks, never words. */
const bare = (s: string) => s.replace(/\s+/g, "");

export abstract class Watcher {
  readonly events: WriteEvent[] = [];
  /** message -> its thread and when it was created. */
  readonly created = new Map<string, { thread: string; at: number }>();
  private readonly waiters = new Set<Waiter>();

  /** The message's text on the platform now; undefined when it is gone. */
  protected abstract textOf(message: string): string | undefined;
  /** Every 429 the platform answered so far, by kind (method or bucket). */
  abstract limited(): Array<{ kind: string; at: number }>;

  protected record(e: WriteEvent): void {
    this.events.push(e);
    if (e.kind === "create" && e.message) this.created.set(e.message, { thread: e.thread, at: e.at });
    for (const w of [...this.waiters]) {
      if (w.thread === e.thread && w.check()) this.waiters.delete(w);
    }
  }

  /** Messages of `thread` created in [from, to), oldest first. */
  messagesOf(thread: string, from: number, to = Number.POSITIVE_INFINITY): string[] {
    return [...this.created]
      .filter(([, c]) => c.thread === thread && c.at >= from && c.at < to)
      .sort((a, b) => a[1].at - b[1].at)
      .map(([id]) => id);
  }

  /** The text of the bot's messages in `thread` created since `from`, joined. */
  textSince(thread: string, from: number): string {
    return this.messagesOf(thread, from)
      .map((m) => this.textOf(m) ?? "")
      .join("\n");
  }

  private wait<T>(thread: string, probe: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waiter: Waiter = {
        thread,
        check: () => {
          const v = probe();
          if (v === undefined) return false;
          clearTimeout(timer);
          resolve(v);
          return true;
        },
      };
      if (waiter.check()) return;
      this.waiters.add(waiter);
      timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new Error(`${what} in ${thread} not seen within ${timeoutMs} ms`));
      }, timeoutMs);
    });
  }

  /** When the bot's first message in `thread` created at or after `since` appeared. */
  firstMessage(thread: string, since: number, timeoutMs = 30_000): Promise<number> {
    return this.wait(
      thread,
      () => {
        const [first] = this.messagesOf(thread, since);
        return first === undefined ? undefined : this.created.get(first)?.at;
      },
      timeoutMs,
      "a first bot message",
    );
  }

  /**
   * When the text of the bot's messages in `thread` created since `since` became `expected`
   * (whitespace aside): the time of the write that completed it.
   */
  complete(thread: string, since: number, expected: string, timeoutMs = 60_000): Promise<number> {
    const want = bare(expected);
    return this.wait(
      thread,
      () => {
        if (bare(this.textSince(thread, since)) !== want) return undefined;
        const last = this.events.findLast((e) => e.thread === thread && e.kind !== "other");
        return last?.at ?? Date.now();
      },
      timeoutMs,
      "the complete answer",
    );
  }

  /**
   * Message writes (creates, edits, deletes) of the answer whose messages were created in
   * [from, to), wherever in time they happened; and other writes in the thread in [from, to).
   */
  writes(thread: string, from: number, to = Number.POSITIVE_INFINITY): { message: number; other: number } {
    const mine = new Set(this.messagesOf(thread, from, to));
    let message = 0;
    let other = 0;
    for (const e of this.events) {
      if (e.thread !== thread) continue;
      if (e.kind === "other") {
        if (e.at >= from && e.at < to) other++;
      } else if (e.message && mine.has(e.message)) message++;
    }
    return { message, other };
  }

  /** 429s since `mark` (an earlier `limited().length`), counted by kind. */
  limitedSince(mark: number): { total: number; byKind: string } {
    const list = this.limited().slice(mark);
    const counts = new Map<string, number>();
    for (const l of list) counts.set(l.kind, (counts.get(l.kind) ?? 0) + 1);
    const byKind = [...counts].map(([k, n]) => `${k} ${n}`).join(", ");
    return { total: list.length, byKind: byKind || "none" };
  }
}
