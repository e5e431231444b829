import { describe, expect, it } from "vitest";
import { ContextSlot } from "./async-context.js";

describe("context slots", () => {
  it("each follows its own work across awaits, and setting one keeps the others", async () => {
    const a = new ContextSlot<string>("a");
    const b = new ContextSlot<number>("b");
    expect(a.get()).toBeUndefined();
    await a.run("outer", async () => {
      await b.run(1, async () => {
        await new Promise((r) => setTimeout(r, 1));
        expect([a.get(), b.get()]).toEqual(["outer", 1]);
        await a.run("inner", async () => {
          await Promise.resolve();
          expect([a.get(), b.get()]).toEqual(["inner", 1]);
        });
        expect(a.get()).toBe("outer");
      });
      expect(b.get()).toBeUndefined();
    });
    expect(a.get()).toBeUndefined();
  });

  it("keeps concurrent work apart", async () => {
    const slot = new ContextSlot<number>("n");
    const seen = await Promise.all(
      [1, 2, 3].map((n) =>
        slot.run(n, async () => {
          await new Promise((r) => setTimeout(r, 4 - n));
          return slot.get();
        }),
      ),
    );
    expect(seen).toEqual([1, 2, 3]);
  });
});
