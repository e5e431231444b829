import { describe, expect, it } from "vitest";
import { randomRef } from "./random-ref.js";

describe("randomRef", () => {
  it("gives base64url refs of the bytes asked for, none twice, across many refills of its pool", () => {
    const refs = Array.from({ length: 5_000 }, () => randomRef());
    for (const ref of refs) expect(ref).toMatch(/^[A-Za-z0-9_-]{12}$/);
    expect(new Set(refs).size).toBe(refs.length);
    expect(randomRef(24)).toMatch(/^[A-Za-z0-9_-]{32}$/);
    // A size that does not divide the pool: the ref that would cross its end comes whole from the next one.
    const odd = Array.from({ length: 1_000 }, () => randomRef(7));
    for (const ref of odd) expect(Buffer.from(ref, "base64url")).toHaveLength(7);
  });

  it("spreads its bytes evenly (no byte value far from its share)", () => {
    const counts = new Array<number>(256).fill(0);
    for (let i = 0; i < 2_000; i++) for (const b of Buffer.from(randomRef(32), "base64url")) counts[b]! += 1;
    // 64,000 bytes: 250 of each value expected; a fair source stays well within ±40 % here.
    expect(Math.min(...counts)).toBeGreaterThan(150);
    expect(Math.max(...counts)).toBeLessThan(350);
  });
});
