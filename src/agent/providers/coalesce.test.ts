import { describe, expect, it } from "vitest";
import { CROWD_STREAMS, coalesce, type EventSink, pushed } from "./coalesce.js";
import type { ModelEvent } from "./provider.js";

/** A source the test feeds by hand, the way chunks arrive from the network. */
function feed() {
  const waiting: Array<(r: IteratorResult<ModelEvent>) => void> = [];
  const sent: ModelEvent[] = [];
  let failure: unknown;
  let done = false;
  let returned = false;
  const flush = () => {
    while (waiting.length > 0 && (sent.length > 0 || done || failure)) {
      const settle = waiting.shift()!;
      if (sent.length > 0) settle({ value: sent.shift()!, done: false });
      else settle({ value: undefined, done: true });
    }
  };
  const source: AsyncIterable<ModelEvent> = {
    [Symbol.asyncIterator]: () => ({
      next: () =>
        failure && sent.length === 0
          ? Promise.reject(failure)
          : new Promise<IteratorResult<ModelEvent>>((resolve) => {
              waiting.push(resolve);
              flush();
            }),
      return: async () => {
        returned = true;
        return { value: undefined, done: true };
      },
    }),
  };
  return {
    source,
    send(...events: ModelEvent[]) {
      sent.push(...events);
      flush();
    },
    end() {
      done = true;
      flush();
    },
    returned: () => returned,
  };
}

const text = (delta: string): ModelEvent => ({ type: "text", delta });

/** A pushing producer the test drives: what it emits through `sink`, and `finish` to end it. */
function byHand() {
  let sink!: EventSink;
  let finish!: () => void;
  const out = pushed(
    (s) =>
      new Promise<void>((resolve) => {
        sink = s;
        finish = resolve;
      }),
  );
  return { out, sink, finish };
}
const tick = () => new Promise((r) => setTimeout(r, 5));

describe("coalesce", () => {
  it("hands on each chunk as it comes to a consumer that keeps up", async () => {
    const f = feed();
    const out = coalesce(f.source);
    f.send(text("Hel"));
    expect(await out.next()).toEqual({ value: text("Hel"), done: false });
    f.send(text("lo"));
    expect(await out.next()).toEqual({ value: text("lo"), done: false });
    f.end();
    expect((await out.next()).done).toBe(true);
  });

  it("joins the text that came while the consumer was busy, and keeps other events in their place", async () => {
    const f = feed();
    const out = coalesce(f.source);
    f.send(text("a"));
    expect(await out.next()).toEqual({ value: text("a"), done: false });
    // The consumer is busy: four chunks, a usage and a stop arrive meanwhile.
    f.send(text("b"), text("c"), { type: "usage", usage: { inputTokens: 3, outputTokens: 4 } }, text("d"));
    f.send({ type: "stop", reason: "end" });
    f.end();
    await tick();
    const rest: ModelEvent[] = [];
    for await (const e of out) rest.push(e);
    expect(rest).toEqual([
      text("bc"),
      { type: "usage", usage: { inputTokens: 3, outputTokens: 4 } },
      text("d"),
      { type: "stop", reason: "end" },
    ]);
  });

  it("hands on what was read before a failure, then the failure", async () => {
    const broken = new Error("stream cut");
    async function* source(): AsyncGenerator<ModelEvent> {
      yield text("par");
      yield text("tial");
      throw broken;
    }
    const seen: ModelEvent[] = [];
    await expect(
      (async () => {
        for await (const e of coalesce(source())) seen.push(e);
      })(),
    ).rejects.toBe(broken);
    expect(seen.map((e) => (e.type === "text" ? e.delta : e.type)).join("")).toBe("partial");
  });

  it("lets go of the source when its consumer stops early", async () => {
    const f = feed();
    const out = coalesce(f.source);
    f.send(text("first"));
    expect(await out.next()).toEqual({ value: text("first"), done: false });
    await out.return(undefined);
    expect(f.returned()).toBe(true);
  });

  it("joins what a pushing producer emitted while its consumer was busy, then hands on its failure", async () => {
    const broken = new Error("stream cut");
    const out = pushed(async (sink) => {
      sink.emit(text("par"));
      sink.emit(text("tial"));
      sink.emit({ type: "usage", usage: { inputTokens: 1, outputTokens: 2 } });
      throw broken;
    });
    await tick();
    expect(await out.next()).toEqual({ value: text("partial"), done: false });
    expect((await out.next()).value).toEqual({ type: "usage", usage: { inputTokens: 1, outputTokens: 2 } });
    await expect(out.next()).rejects.toBe(broken);
  });

  it("hands on the first words and the end without waiting for the event loop's next turn, the words between after it", async () => {
    const { out, sink, finish } = byHand();
    const order: string[] = [];
    /** The next event or the end, raced against the event loop's next turn. */
    const race = async () => {
      const turned = new Promise<void>((resolve) =>
        setImmediate(() => {
          order.push("next turn");
          resolve();
        }),
      );
      const next = out
        .next()
        .then((r) => void order.push(r.done ? "end" : (r.value as { delta: string }).delta));
      await Promise.all([turned, next]);
    };
    const first = race();
    sink.emit(text("Hello"));
    sink.emit(text(","));
    await first;
    const between = race();
    sink.emit(text(" world"));
    await between;
    const end = race();
    finish();
    await end;
    expect(order).toEqual(["Hello,", "next turn", "next turn", " world", "end", "next turn"]);
  });

  it("with a crowd of streams, hands on the words between the first and the end in batches a tenth of a second apart", async () => {
    // Streams open beside this one: more than CROWD_STREAMS in all.
    const others = Array.from({ length: CROWD_STREAMS }, byHand);
    const { out, sink, finish } = byHand();
    const order: string[] = [];
    const next = () =>
      out.next().then((r) => void order.push(r.done ? "end" : (r.value as { delta: string }).delta));
    const mark = (ms: number) =>
      new Promise<void>((r) => setTimeout(() => r(void order.push(`${ms} ms`)), ms));

    let got = next();
    sink.emit(text("Hello"));
    await got;
    got = next();
    sink.emit(text(" wor"));
    await mark(10);
    sink.emit(text("ld"));
    // Both words wait for the batch: the consumer is not woken chunk by chunk.
    await Promise.race([got, mark(40)]);
    await got;
    got = next();
    finish();
    await Promise.race([got, mark(40)]);
    await got;
    // The end went at once, before its race's timer (which comes after, not awaited here).
    expect(order.slice(0, 5)).toEqual(["Hello", "10 ms", "40 ms", " world", "end"]);

    // The crowd gone, a stream is handed on chunk by chunk again.
    for (const o of others) {
      o.finish();
      await o.out.next();
    }
    const alone = feed();
    const single = coalesce(alone.source);
    alone.send(text("a"));
    expect(await single.next()).toEqual({ value: text("a"), done: false });
    alone.send(text("b"));
    expect(await single.next()).toEqual({ value: text("b"), done: false });
    alone.end();
  });

  it("tells a pushing producer when its consumer stops early", async () => {
    let resume!: () => void;
    const seen: boolean[] = [];
    const out = pushed(async (sink) => {
      sink.emit(text("first"));
      seen.push(sink.stopped());
      await new Promise<void>((r) => {
        resume = r;
      });
      seen.push(sink.stopped());
    });
    expect(await out.next()).toEqual({ value: text("first"), done: false });
    await out.return(undefined);
    resume();
    await tick();
    expect(seen).toEqual([false, true]);
  });
});
