import { type Context, createContextKey, ROOT_CONTEXT } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { LinkedContext } from "./linked-context.js";

const keys = Array.from({ length: 6 }, (_, i) => createContextKey(`k${i}`));

describe("LinkedContext", () => {
  it("answers as OpenTelemetry's own context does, along any sequence of sets and deletes from any earlier context", () => {
    // A seeded walk: each step derives a new context from one made earlier (or the last),
    // in both implementations, and every context made so far is read back in full.
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    const ours: Context[] = [LinkedContext.ROOT];
    const theirs: Context[] = [ROOT_CONTEXT];
    for (let step = 0; step < 2_000; step++) {
      const from = rand(4) === 0 ? rand(ours.length) : ours.length - 1;
      const key = keys[rand(keys.length)]!;
      const value = rand(5) === 0 ? undefined : `v${step}`;
      const remove = rand(4) === 0;
      ours.push(remove ? ours[from]!.deleteValue(key) : ours[from]!.setValue(key, value));
      theirs.push(remove ? theirs[from]!.deleteValue(key) : theirs[from]!.setValue(key, value));
    }
    for (let i = 0; i < ours.length; i++)
      for (const key of keys) expect(ours[i]!.getValue(key)).toBe(theirs[i]!.getValue(key));
  });

  it("leaves the context it came from as it was", () => {
    const [a, b] = keys as [symbol, symbol];
    const first = LinkedContext.ROOT.setValue(a, 1);
    const second = first.setValue(a, 2).setValue(b, 3).deleteValue(a);
    expect(first.getValue(a)).toBe(1);
    expect(first.getValue(b)).toBeUndefined();
    expect(second.getValue(a)).toBeUndefined();
    expect(second.getValue(b)).toBe(3);
    expect(LinkedContext.ROOT.getValue(a)).toBeUndefined();
  });

  it("keeps a chain derived from itself thousands of times short, with every value", () => {
    const [a, b, c] = keys as [symbol, symbol, symbol];
    let ctx = LinkedContext.ROOT.setValue(a, "kept").setValue(c, "gone");
    ctx = ctx.deleteValue(c);
    for (let i = 0; i < 10_000; i++) ctx = ctx.setValue(b, i);
    expect(ctx.getValue(a)).toBe("kept");
    expect(ctx.getValue(b)).toBe(9_999);
    expect(ctx.getValue(c)).toBeUndefined();
    let depth = 0;
    for (
      let link = ctx as unknown as { parent?: unknown };
      link.parent;
      link = link.parent as { parent?: unknown }
    )
      depth++;
    expect(depth).toBeLessThanOrEqual(33);
  });
});
