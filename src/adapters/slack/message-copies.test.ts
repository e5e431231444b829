import { describe, expect, it } from "vitest";
import { MessageCopies } from "./message-copies.js";

describe("a message's copies", () => {
  it("takes a message once and drops its copies", () => {
    const copies = new MessageCopies();
    expect(copies.first("C1:1.0001", 0)).toBe(true);
    expect(copies.first("C1:1.0001", 10)).toBe(false);
    expect(copies.first("C1:1.0002", 20)).toBe(true);
    expect(copies.first("C2:1.0001", 30)).toBe(true);
  });

  it("forgets a message after the window, and the oldest first beyond the cap", () => {
    const copies = new MessageCopies(1_000, 2);
    expect(copies.first("a", 0)).toBe(true);
    expect(copies.first("a", 999)).toBe(false);
    expect(copies.first("a", 1_000)).toBe(true);
    expect(copies.first("b", 1_001)).toBe(true);
    expect(copies.first("c", 1_002)).toBe(true);
    // "a" (the oldest) made room for "c"; "b" is still known.
    expect(copies.first("b", 1_003)).toBe(false);
    expect(copies.first("a", 1_004)).toBe(true);
  });
});
