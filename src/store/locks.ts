import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { log } from "../log.js";
import type { RedisClient, Store } from "./index.js";

/** Runs the turns of one thread one at a time, in arrival order; different threads run concurrently. */
export interface ThreadLock {
  run<T>(key: string, fn: () => Promise<T>): Promise<T>;
  /** Turns of this thread in this process that are running or waiting (0 when idle). */
  queued(key: string): number;
}

interface Queue {
  tail: Promise<void>;
  count: number;
}

/**
 * A promise chain per key. Each turn waits for the one before it, whether that one
 * succeeded or threw, so a failed turn never blocks the next and none is dropped.
 * The entry is deleted when its last turn ends: idle threads cost no memory.
 */
export class LocalThreadLock implements ThreadLock {
  private readonly queues = new Map<string, Queue>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    let queue = this.queues.get(key);
    if (!queue) {
      queue = { tail: Promise.resolve(), count: 0 };
      this.queues.set(key, queue);
    }
    const before = queue.tail;
    let release!: () => void;
    queue.tail = new Promise<void>((r) => {
      release = r;
    });
    queue.count++;
    try {
      await before;
      return await fn();
    } finally {
      release();
      queue.count--;
      if (queue.count === 0 && this.queues.get(key) === queue) this.queues.delete(key);
    }
  }

  queued(key: string): number {
    return this.queues.get(key)?.count ?? 0;
  }
}

export interface RedisLockOptions {
  /** Lock expiry; a replica that dies holding the lock blocks its thread at most this long. */
  ttlMs?: number;
  /** How often a running turn extends its lock; well under ttlMs. */
  renewEveryMs?: number;
  /** Longest pause between two attempts of a waiting turn. */
  maxPollMs?: number;
}

const RELEASE = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;
const EXTEND = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`;

/**
 * The lock across replicas: SET NX PX with a random token, extended while the turn runs,
 * released only by its owner (compare-and-delete). Turns of one process first queue
 * locally, so arrival order holds within a process and only one of them polls Redis.
 */
export class RedisThreadLock implements ThreadLock {
  private readonly local = new LocalThreadLock();
  private readonly ttlMs: number;
  private readonly renewEveryMs: number;
  private readonly maxPollMs: number;

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    options: RedisLockOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 30_000;
    this.renewEveryMs = options.renewEveryMs ?? Math.floor(this.ttlMs / 3);
    this.maxPollMs = options.maxPollMs ?? 500;
  }

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    return this.local.run(key, () => this.holding(key, fn));
  }

  queued(key: string): number {
    return this.local.queued(key);
  }

  private async holding<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const lockKey = `${this.prefix}lock:${key}`;
    const token = randomUUID();
    await this.acquire(lockKey, token);
    const timer = setInterval(() => void this.extend(lockKey, token), this.renewEveryMs);
    timer.unref();
    try {
      return await fn();
    } finally {
      clearInterval(timer);
      await this.client
        .eval(RELEASE, { keys: [lockKey], arguments: [token] })
        .catch((err: unknown) =>
          log.warn({ err, key }, "releasing thread lock failed; it expires by itself"),
        );
    }
  }

  private async acquire(lockKey: string, token: string): Promise<void> {
    let pause = 20;
    for (;;) {
      const ok = await this.client.set(lockKey, token, {
        condition: "NX",
        expiration: { type: "PX", value: this.ttlMs },
      });
      if (ok === "OK") return;
      // Jitter keeps replicas waiting on the same thread from polling in step.
      await sleep(pause / 2 + Math.random() * pause);
      pause = Math.min(pause * 2, this.maxPollMs);
    }
  }

  private async extend(lockKey: string, token: string): Promise<void> {
    try {
      const kept = await this.client.eval(EXTEND, {
        keys: [lockKey],
        arguments: [token, String(this.ttlMs)],
      });
      if (kept !== 1) log.warn({ lockKey }, "thread lock expired while its turn was still running");
    } catch (err) {
      log.warn({ err, lockKey }, "extending thread lock failed");
    }
  }
}

export function createThreadLock(store: Store, options?: RedisLockOptions): ThreadLock {
  if (store.redis) return new RedisThreadLock(store.redis, `${store.namespace}:`, options);
  return new LocalThreadLock();
}
