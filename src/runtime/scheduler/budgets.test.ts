import { describe, expect, it } from "vitest";
import {
  type BucketView,
  IDLE_BUCKET_MS,
  LocalBudgets,
  UNKNOWN_LIMIT_HISTORY_MS,
  type WritePolicy,
} from "./budgets.js";

/** "edits": 2 per second, known only once a 429 taught it (as Slack's chat.update per channel). */
const policy: WritePolicy = {
  limitOf: (bucket, learned) =>
    bucket === "edits" && learned ? { capacity: 2, windowMs: 1_000 } : undefined,
};

/** The book with its view of a bucket in sight. */
class Book extends LocalBudgets {
  view(key: string): BucketView | undefined {
    return this.ownView(key);
  }

  count(): number {
    return [...this.own()].length;
  }
}

describe("local write budgets", () => {
  it("keeps a bucket without a known limit to its last ten minutes of writes, not every write ever", () => {
    const book = new Book(policy);
    const start = 1_000_000;
    // Twenty minutes of one edit a second, each asked for first as the scheduler asks.
    for (let s = 0; s < 1_200; s++) {
      const now = start + s * 1_000;
      expect(book.wait("edits", 0, now)).toBe(0);
      book.spend(["edits"], now);
    }
    const kept = book.view("edits")?.sent ?? [];
    expect(kept.length).toBe(UNKNOWN_LIMIT_HISTORY_MS / 1_000);
    expect(kept[0]).toBe(start + 1_200_000 - UNKNOWN_LIMIT_HISTORY_MS);
  });

  it("counts the writes before a limit was learned against it", () => {
    const book = new Book(policy);
    book.spend(["edits"], 10_000);
    book.spend(["edits"], 10_200);
    // A 429 teaches the limit (2 per second) and pauses the bucket for 100 ms.
    book.pause("edits", 100, 10_300);
    // Paused until 10,400; after that the two earlier writes still fill the window until 11,000.
    expect(book.wait("edits", 0, 10_350)).toBe(650);
    expect(book.wait("edits", 0, 10_900)).toBe(100);
    expect(book.wait("edits", 0, 11_000)).toBe(0);
  });

  it("takes a refunded write out of its buckets' windows, once, and leaves the others' writes counted", () => {
    const book = new Book({ limitOf: () => ({ capacity: 2, windowMs: 1_000 }) });
    book.spend(["narrow", "wide"], 100);
    book.spend(["narrow", "wide"], 200);
    expect(book.wait("wide", 0, 300)).toBe(800);
    book.refund(["narrow", "wide"], 200);
    book.refund(["narrow", "wide"], 200);
    expect(book.wait("wide", 0, 300)).toBe(0);
    expect(book.view("narrow")?.sent).toEqual([100]);
    expect(book.view("wide")?.sent).toEqual([100]);
  });

  it("forgets the buckets of interactions long done, however many, but not one still paused or in use", () => {
    const book = new Book(policy);
    const start = 1_000_000;
    // A thousand interactions' buckets, one a second, each written to and refused once.
    for (let i = 0; i < 1_000; i++) {
      book.spend([`hook:${i}`, "global"], start + i * 1_000);
      book.pause(`hook:${i}`, 1_000, start + i * 1_000);
    }
    // Paused for longer than a bucket may stay idle.
    book.pause("edits", 3 * IDLE_BUCKET_MS, start);
    const later = start + 999_000 + IDLE_BUCKET_MS + 60_000;
    book.spend(["hook:next", "global"], later);
    // What is left: the bucket written to all along, the one still paused, and the newest.
    expect(book.count()).toBe(3);
    expect(book.view("hook:999")).toBeUndefined();
    expect(book.view("global")).toBeDefined();
    expect(book.wait("edits", 0, later)).toBe(start + 3 * IDLE_BUCKET_MS - later);
    // Once its pause is over and nothing used it for as long, it goes too.
    const after = start + 3 * IDLE_BUCKET_MS + 1;
    book.spend(["global"], after);
    expect(book.view("edits")).toBeUndefined();
    expect(book.count()).toBe(2);
  });
});
