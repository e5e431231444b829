import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ModelEvent, ModelRequest, Provider } from "../agent/providers/provider.js";
import { createThreadLock } from "../store/locks.js";
import { WaitingMessages } from "../store/waiting-messages.js";
import { aliceSays, fakeSlack, KEY, TakeoverBed } from "./takeover.test-helper.js";

/** Answers each question with its own text; the first answer waits until `release`. */
class GatedProvider implements Provider {
  readonly name = "openai" as const;
  readonly asked: string[] = [];
  release!: () => void;
  private readonly gate = new Promise<void>((r) => {
    this.release = r;
  });

  async *stream(req: ModelRequest): AsyncIterable<ModelEvent> {
    const last = req.messages.at(-1);
    const text = typeof last?.content === "string" ? last.content : "";
    this.asked.push(text);
    if (this.asked.length === 1) await this.gate;
    yield { type: "text", delta: `Answer to ${text}.` };
    yield { type: "stop", reason: "end" };
  }

  async listModels(): Promise<string[]> {
    return [];
  }
}

async function until(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  for (const end = Date.now() + 10_000; !(await check()); ) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("a message waiting behind its thread's answer, kept in the store", () => {
  let bed: TakeoverBed;
  beforeEach(async () => {
    bed = await TakeoverBed.open();
  });
  afterEach(() => bed.close());

  async function queuedBehindFirst() {
    const provider = new GatedProvider();
    const { dispatcher } = bed.setup(provider, { lock: createThreadLock(bed.store), waiting: true });
    const [first, second] = [fakeSlack(), fakeSlack()];
    const answered = [
      dispatcher.handle(aliceSays("e1", "one", first.reply)),
      (async () => {
        await until(() => provider.asked.length === 1, "the first question");
        await dispatcher.handle(aliceSays("e2", "two", second.reply));
      })(),
    ];
    const waiting = new WaitingMessages(bed.store, bed.ledger);
    // Kept at once: it waits behind a turn of its own process.
    await until(async () => (await waiting.threads()).includes(KEY), "the second message to be kept");
    return { provider, answered, second, waiting };
  }

  it("is answered here once its turn begins, and its kept copy is gone", async () => {
    const { provider, answered, second, waiting } = await queuedBehindFirst();
    provider.release();
    await Promise.all(answered);
    expect(second.seen.join("")).toContain("Answer to two.");
    expect(await waiting.threads()).toEqual([]);
  });

  it("is not answered here when another process adopted it while this one looked dead", async () => {
    const { provider, answered, second, waiting } = await queuedBehindFirst();
    // Another replica found this process's heartbeat silent (a stall) and took the message.
    expect(await waiting.adopt(KEY, async () => false)).toBe(1);
    provider.release();
    await Promise.all(answered);
    expect(provider.asked).toHaveLength(1);
    expect(second.seen).toEqual([]);
    expect((await bed.ledger.takeHanded(KEY)).map((m) => m.text)).toEqual(["two"]);
  });
});
