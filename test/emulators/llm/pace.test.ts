import { describe, expect, it } from "vitest";
import { Pace } from "./pace.js";

describe("Pace", () => {
  it("spaces chunks evenly while the writer keeps up", () => {
    let now = 1_000;
    const pace = new Pace(20, () => now);
    expect(pace.next()).toBe(20);
    now += 20;
    expect(pace.next()).toBe(20);
    now += 25; // this chunk went out 5 ms late: the next is due 5 ms sooner
    expect(pace.next()).toBe(15);
  });

  it("does not let a late writer slow the model: what fell due meanwhile is due at once", () => {
    let now = 0;
    const pace = new Pace(20, () => now);
    expect(pace.next()).toBe(20);
    now = 100; // the event loop was busy: chunks 2-5 fell due at 40, 60, 80 and 100
    expect([pace.next(), pace.next(), pace.next(), pace.next()]).toEqual([0, 0, 0, 0]);
    expect(pace.next()).toBe(20);
  });
});
