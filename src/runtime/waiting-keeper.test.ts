import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ModelEvent, ModelRequest, Provider } from "../agent/providers/provider.js";
import { ClaimLost, createThreadLock } from "../store/locks.js";
import { type Kept, WaitingMessages } from "../store/waiting-messages.js";
import { aliceSays, fakeSlack, KEY, TakeoverBed } from "./takeover.test-helper.js";
import { KEEP_AFTER_MS, WaitingKeeper } from "./waiting-keeper.js";

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

  it("answers a message a dead process kept before a newer message of the thread, though the thread was busy here", async () => {
    const provider = new GatedProvider();
    const { dispatcher } = bed.setup(provider, { lock: createThreadLock(bed.store), waiting: true });
    const slack = fakeSlack();
    await dispatcher.recoverInterrupted([slack.adapter]);
    const said: string[] = [];
    const reply = (): ReturnType<typeof fakeSlack>["reply"] => {
      const r = fakeSlack().reply;
      return { ...r, stream: () => ({ ...r.stream(), write: (d: string) => void said.push(d) }) };
    };
    const first = dispatcher.handle(aliceSays("e1", "one", reply()));
    await until(() => provider.asked.length === 1, "the first question");
    // Kept by a process that died while it waited for this thread, sent before the next one.
    const waiting = new WaitingMessages(bed.store, bed.ledger);
    await waiting.keep(
      { key: KEY, id: "orphan", owner: "a-process-gone" },
      {
        text: "zero",
        user: { id: "U1" },
        channel: "C1",
        sentAt: Date.now(),
      },
    );
    // A round of the watch sees it while this process answers the thread (and so leaves it).
    await new Promise((r) => setTimeout(r, 2_500));
    const third = dispatcher.handle({ ...aliceSays("e3", "three", reply()), sentAt: Date.now() });
    provider.release();
    await Promise.all([first, third]);
    await dispatcher.settled();
    // Asked in the order sent; the kept one answered in a reply rebuilt from the platform's adapter.
    expect(provider.asked).toEqual(["one", expect.stringContaining("zero"), "three"]);
    expect(said.filter((d) => d.startsWith("Answer to"))).toEqual(["Answer to one.", "Answer to three."]);
    expect(await waiting.threads()).toEqual([]);
  }, 20_000);
});

describe("WaitingKeeper against a store that fails", () => {
  const lease = { key: KEY, token: "t" };
  const inbound = aliceSays("e9", "nine", fakeSlack().reply);

  function flaky(fails: { keep?: boolean; forget?: number }) {
    const forgets: Array<{ kept: Kept; lease: unknown }> = [];
    const keeps: Kept[] = [];
    let failures = fails.forget ?? 0;
    const messages = {
      keep: async (kept: Kept) => {
        keeps.push(kept);
        if (fails.keep) throw new Error("the store dropped the second write");
      },
      forget: async (kept: Kept, l?: unknown) => {
        forgets.push({ kept, lease: l });
        if (failures-- > 0) throw new Error("the store is unreachable");
        return true;
      },
    } as unknown as WaitingMessages;
    return { keeper: new WaitingKeeper(messages, "me"), forgets, keeps };
  }

  it("keeps a message at once when it is known to wait for another process, not after KEEP_AFTER_MS", async () => {
    const { keeper, keeps } = flaky({});
    keeper.queued(inbound, false);
    expect(keeps).toEqual([]);
    keeper.waits(inbound);
    expect(keeps.map((k) => k.owner)).toEqual(["me"]);
    // Kept once: the timer it replaced does not keep it again.
    await new Promise((r) => setTimeout(r, KEEP_AFTER_MS + 100));
    expect(keeps).toHaveLength(1);
    expect(await keeper.done(inbound, lease)).toBe(true);
  });

  it("keeps nothing when told it waits once its turn has begun", async () => {
    const { keeper, keeps } = flaky({});
    keeper.queued(inbound, false);
    expect(await keeper.starting(inbound, lease)).toEqual({
      took: undefined,
      recorded: expect.any(Function),
    });
    keeper.waits(inbound);
    await new Promise((r) => setTimeout(r, KEEP_AFTER_MS + 100));
    expect(keeps).toEqual([]);
  });

  it("tries a failed removal again, so that no copy is left to be answered twice once this process stops", async () => {
    const { keeper, forgets } = flaky({ forget: 1 });
    keeper.queued(inbound, true);
    expect(await keeper.done(inbound, lease)).toBe(true);
    await keeper.settled();
    expect(forgets.map((f) => f.lease)).toEqual([lease, undefined]);
  }, 10_000);

  it("takes back what landed of a copy the store failed to keep whole, without a claim", async () => {
    const { keeper, forgets } = flaky({ keep: true });
    keeper.queued(inbound, true);
    expect(await keeper.done(inbound, lease)).toBe(true);
    await keeper.settled();
    expect(forgets).toHaveLength(1);
    expect(forgets[0]?.lease).toBeUndefined();
  });
});

describe("a message a stopping process hands over", () => {
  const custody = (stored: string[]) => ({
    stored: () => void stored.push("stored"),
    claimsOf: () => ({ keys: ["dedupe:e1"], mine: ["a", "held:a"], value: "held:a", ttlMs: 60_000 }),
  });

  it("is left to the process that took it over meanwhile: no restart note, and not said stored", async () => {
    const stored: string[] = [];
    const keeper = new WaitingKeeper(undefined, "a", custody(stored));
    let noted = 0;
    let claims: unknown;
    await keeper.refuse(aliceSays("e1", "one", fakeSlack().reply), {
      handOff: async (_id, c) => {
        claims = c;
        throw new ClaimLost(KEY);
      },
      note: async () => {
        noted += 1;
      },
    });
    // Its claims went with the hand-over, to be held in the same write.
    expect(claims).toMatchObject({ keys: ["dedupe:e1"] });
    expect(noted).toBe(0);
    expect(stored).toEqual([]);
  });

  it("gets the restart note when the hand-over failed for any other reason", async () => {
    const stored: string[] = [];
    const keeper = new WaitingKeeper(undefined, "a", custody(stored));
    let noted = 0;
    await keeper.refuse(aliceSays("e1", "one", fakeSlack().reply), {
      handOff: async () => {
        throw new Error("The store is away.");
      },
      note: async () => {
        noted += 1;
      },
    });
    expect(noted).toBe(1);
  });
});
