import type { MessageOps, WriteInfo } from "./stream.js";

/** One recorded write: what was asked, when, and whether the "platform" accepted it. */
export interface Call {
  op: "post" | "edit" | "remove";
  id: string;
  text: string;
  at: number;
  ok: boolean;
  /** The writer said this is the reply's last write. */
  final: boolean;
  /** The post's idempotency key, when it had one. */
  key?: string;
  /** Every message's text at the moment of the call (before it applies). */
  before: Map<string, string>;
}

type Failure = (n: number, text: string) => Error | null;

/**
 * An in-memory channel for `StreamWriter` tests: it keeps each message's text, records
 * every call, tracks concurrency, and fails the calls a test tells it to fail.
 */
export class FakeChannel implements MessageOps {
  readonly messages = new Map<string, string>();
  readonly calls: Call[] = [];
  inFlight = 0;
  maxInFlight = 0;
  private next = 1;
  private posts = 0;
  private edits = 0;

  constructor(
    private readonly opts: {
      latencyMs?: number;
      failPost?: Failure;
      failEdit?: Failure;
      withRemove?: boolean;
      prefix?: string;
      /**
       * Keyed posts: "find" keeps each post's key and answers `find` (Slack's metadata);
       * "deduped" answers a post whose key it has seen with that message (Discord's nonce).
       */
      keyed?: "find" | "deduped";
      /** The n-th post lands, but its answer is lost (a timeout, a dropped connection). */
      lostAnswer?: (n: number) => boolean;
    } = {},
  ) {
    if (opts.keyed === "find") {
      this.find = async (key: string) => {
        this.lookups.push(key);
        return this.keys.get(key) ?? null;
      };
    }
    this.postsDeduped = opts.keyed === "deduped";
    if (opts.withRemove) {
      this.remove = (id: string) =>
        this.call("remove", id, "", undefined, () => {
          this.messages.delete(id);
        });
    }
  }

  remove?: (id: string) => Promise<void>;
  find?: (key: string) => Promise<string | null>;
  postsDeduped: boolean;
  /** Message id by the key it was posted with. */
  readonly keys = new Map<string, string>();
  /** Keys `find` was asked for, in order. */
  readonly lookups: string[] = [];

  /** A message written before this writer (a reply to resume). */
  seed(id: string, text: string): void {
    this.messages.set(id, text);
  }

  post(text: string, write?: WriteInfo): Promise<string> {
    const n = ++this.posts;
    const id = `${this.opts.prefix ?? "m"}${this.next++}`;
    return this.call("post", id, text, write, () => {
      const failure = this.opts.failPost?.(n, text);
      if (failure) throw failure;
      const seen = write?.key === undefined ? undefined : this.keys.get(write.key);
      if (seen !== undefined && this.postsDeduped) return seen;
      this.messages.set(id, text);
      if (write?.key !== undefined && this.opts.keyed) this.keys.set(write.key, id);
      if (this.opts.lostAnswer?.(n)) throw new Error("socket hang up");
      return id;
    });
  }

  edit(id: string, text: string, write?: WriteInfo): Promise<void> {
    const n = ++this.edits;
    return this.call("edit", id, text, write, () => {
      if (!this.messages.has(id)) throw new Error(`unknown message ${id}`);
      const failure = this.opts.failEdit?.(n, text);
      if (failure) throw failure;
      this.messages.set(id, text);
    });
  }

  /** Final texts in message order. */
  texts(): string[] {
    return [...this.messages.values()];
  }

  callsOf(op: Call["op"]): Call[] {
    return this.calls.filter((c) => c.op === op);
  }

  private async call<T>(
    op: Call["op"],
    id: string,
    text: string,
    write: WriteInfo | undefined,
    apply: () => T,
  ): Promise<T> {
    const record: Call = {
      op,
      id,
      text,
      at: Date.now(),
      ok: false,
      final: write?.final ?? false,
      ...(write?.key === undefined ? {} : { key: write.key }),
      before: new Map(this.messages),
    };
    this.calls.push(record);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.opts.latencyMs) await new Promise((r) => setTimeout(r, this.opts.latencyMs));
      const result = apply();
      record.ok = true;
      return result;
    } finally {
      this.inFlight--;
    }
  }
}

/** A seeded PRNG (mulberry32), so random tests replay exactly. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
