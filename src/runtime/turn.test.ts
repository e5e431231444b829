import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { callTools, FunctionHub, ScriptedProvider, say } from "../../test/support/scripted.js";
import { Agent } from "../agent/agent.js";
import type { ModelEvent, ModelRequest, Provider } from "../agent/providers/provider.js";
import { configSchema } from "../config.js";
import type { Artifact } from "../core/artifacts.js";
import type { ToolOutcome } from "../mcp/types.js";
import { ApprovalBook } from "../store/approvals.js";
import { MemoryDedupe } from "../store/dedupe.js";
import { openStore, type Store } from "../store/index.js";
import { LocalThreadLock } from "../store/locks.js";
import { SessionRepository } from "../store/sessions.js";
import { TurnLedger } from "../store/turns.js";
import type { Inbound, Interaction, Reply } from "./contract.js";
import { Dispatcher } from "./dispatcher.js";
import { EXPIRED_NOTE } from "./interactions.js";

const KEY = "slack:T1:C1:1712345678.000100";

/** A reply that records what the user would see, in order. */
function recordingReply() {
  const seen: string[] = [];
  const uploads: string[] = [];
  const reply: Reply = {
    status: async () => undefined,
    stream: () => ({
      write: (d) => void seen.push(`text:${d}`),
      finish: async () => void seen.push("finish"),
      fail: async (m) => void seen.push(`fail:${m}`),
    }),
    upload: async (a) => void uploads.push(a.filename),
    title: async (t) => void seen.push(`title:${t}`),
    notice: async (t) => void seen.push(`notice:${t}`),
  };
  return { reply, seen, uploads };
}

function message(id: string, text: string, reply: Reply): Inbound {
  return { id, key: KEY, platform: "slack", channel: "C1", user: { id: "U1" }, text, attachments: [], reply };
}

/** A hub whose one tool returns an image with its text. */
class ImageHub extends FunctionHub {
  override async call(name: string, args: Record<string, unknown>): Promise<ToolOutcome> {
    const outcome = await super.call(name, args);
    const image: Artifact = {
      title: "chart",
      filename: "chart.png",
      mimeType: "image/png",
      bytes: new Uint8Array([1]),
    };
    return { ...outcome, artifacts: [image] };
  }
}

describe("a turn owned by the runtime", () => {
  let dir: string;
  let store: Store;
  let sessions: SessionRepository;
  let ledger: TurnLedger;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "sb-turn-"));
    store = await openStore(`sqlite://${join(dir, "s.sqlite")}`);
    sessions = new SessionRepository(store);
    ledger = new TurnLedger(store);
  });

  afterEach(async () => {
    await store.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  function dispatcherWith(provider: Provider, hub = new FunctionHub({ util__echo: () => "echoed" })) {
    // These tests are about the turn, not approvals: every tool runs without asking.
    const config = configSchema.parse({
      memory: { compressAt: 0.9 },
      approvals: { rules: [{ server: "*", mode: "always" }] },
    });
    const agent = new Agent({ config, hub, providerFor: () => provider, sessions });
    return new Dispatcher({
      agent,
      sessions,
      ledger,
      lock: new LocalThreadLock(),
      dedupe: new MemoryDedupe(),
      approvals: new ApprovalBook(store),
      hub,
      config,
    });
  }

  /** Counts the writes of the thread's session record in SQLite. */
  function countSessionWrites(): { n: number } {
    const count = { n: 0 };
    const set = store.kv.set.bind(store.kv);
    store.kv.set = ((key: string, ...rest: unknown[]) => {
      if (key === `session:${KEY}`) count.n++;
      return (set as (...a: unknown[]) => Promise<boolean>)(key, ...rest);
    }) as typeof store.kv.set;
    return count;
  }

  it("writes the session once per tool step and once at the end", async () => {
    await sessions.save({ ...(await sessions.getOrCreate(KEY)), title: "Already titled" });
    const writes = countSessionWrites();
    const provider = new ScriptedProvider([
      callTools(["util__echo", { text: "a" }]),
      callTools(["util__echo", { text: "b" }]),
      say("Both echoed."),
    ]);
    const { reply, seen } = recordingReply();
    await dispatcherWith(provider).handle(message("e1", "echo twice", reply));

    expect(seen.at(-1)).toBe("finish");
    expect(writes.n).toBe(3);
    const stored = await sessions.get(KEY);
    expect(stored?.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
      "tool",
      "assistant",
    ]);
    expect(stored?.turns).toBe(1);
  });

  it("has the user's message and the finished tool steps in the store while the next step runs", async () => {
    let storedDuringStep: string[] | undefined;
    const provider = new ScriptedProvider([callTools(["util__echo", { text: "a" }]), () => []]);
    const slow: Provider = {
      name: "openai",
      listModels: async () => [],
      async *stream(req: ModelRequest, signal: AbortSignal): AsyncIterable<ModelEvent> {
        // Only the turn's second step: the thread's title, asked after the turn, comes here too.
        if (provider.requests.length === 1 && storedDuringStep === undefined) {
          storedDuringStep = (await sessions.get(KEY))?.messages.map((m) => m.role);
          yield* say("Done.");
          return;
        }
        yield* provider.stream(req);
        void signal;
      },
    };
    const { reply } = recordingReply();
    await dispatcherWith(slow).handle(message("e1", "echo once", reply));
    expect(storedDuringStep).toEqual(["user", "assistant", "tool"]);
  });

  it("answers the thread's next message while the previous turn's title is still being made", async () => {
    let releaseTitle!: () => void;
    const titleHeld = new Promise<void>((r) => {
      releaseTitle = r;
    });
    const order: string[] = [];
    const provider: Provider = {
      name: "openai",
      listModels: async () => [],
      async *stream(req: ModelRequest): AsyncIterable<ModelEvent> {
        if (req.system.startsWith("You name chat threads")) {
          order.push("title asked");
          await titleHeld;
          order.push("title answered");
          yield* say("A thread title");
          return;
        }
        const last = req.messages.at(-1);
        order.push(`answer ${last?.role === "user" ? last.content : "?"}`);
        yield* say("Sure.");
      },
    };
    const dispatcher = dispatcherWith(provider);
    const first = recordingReply();
    const second = recordingReply();
    await dispatcher.handle(message("e1", "first", first.reply));
    await dispatcher.handle(message("e2", "second", second.reply));
    expect(second.seen).toEqual(["text:Sure.", "finish"]);
    expect(order).toEqual(["answer first", "title asked", "answer second"]);

    releaseTitle();
    await dispatcher.settled();
    expect(first.seen.at(-1)).toBe("title:A thread title");
    const stored = await sessions.get(KEY);
    expect(stored?.title).toBe("A thread title");
    expect(stored?.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual([
      "first",
      "second",
    ]);
  });

  it("uploads the files a tool made before the turn failed", async () => {
    const provider = new ScriptedProvider([callTools(["util__chart", {}])]);
    const { reply, seen, uploads } = recordingReply();
    const hub = new ImageHub({ util__chart: () => "[Attached file: chart.png]" });
    await dispatcherWith(provider, hub).handle(message("e1", "draw", reply));
    expect(seen.at(-1)).toMatch(/^fail:/);
    expect(uploads).toEqual(["chart.png"]);
  });

  /** Holds the writes of the thread's turn record until `release` (or fails them with `fail`). */
  function holdRecordWrites(fail?: Error) {
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
      // Never held for good: a turn that waited for its record before asking the model goes on.
      setTimeout(r, 300);
    });
    const log: string[] = [];
    const set = store.kv.set.bind(store.kv);
    store.kv.set = (async (key: string, ...rest: unknown[]) => {
      if (key === `turn:${KEY}`) {
        await held;
        if (fail) throw fail;
        const done = await (set as (...a: unknown[]) => Promise<boolean>)(key, ...rest);
        log.push("record stored");
        return done;
      }
      return (set as (...a: unknown[]) => Promise<boolean>)(key, ...rest);
    }) as typeof store.kv.set;
    return { release, log };
  }

  it("asks the model while the turn's record is written, and shows nothing before it is stored", async () => {
    const record = holdRecordWrites();
    const order = record.log;
    const provider: Provider = {
      name: "openai",
      listModels: async () => [],
      async *stream() {
        order.push("model asked");
        // The record lands only now: the model was asked without waiting for it.
        setTimeout(record.release, 20);
        yield* say("Hi.");
      },
    };
    const { reply, seen } = recordingReply();
    const stream = reply.stream.bind(reply);
    reply.stream = ((...args: Parameters<Reply["stream"]>) => {
      const sink = stream(...args);
      return {
        ...sink,
        write: (d: string) => {
          order.push("text shown");
          sink.write(d);
        },
      };
    }) as Reply["stream"];
    await dispatcherWith(provider).handle(message("e1", "hello", reply));
    expect(order.slice(0, 3)).toEqual(["model asked", "record stored", "text shown"]);
    expect(seen).toEqual(["text:Hi.", "finish"]);
  });

  it("shows the store's sentence and none of the answer when the turn's record cannot be stored", async () => {
    const record = holdRecordWrites(new Error("SQLITE_FULL: database or disk is full"));
    record.release();
    const { reply, seen } = recordingReply();
    await dispatcherWith(new ScriptedProvider([say("Hi.")])).handle(message("e1", "hello", reply));
    expect(seen.filter((s) => s.startsWith("text:"))).toEqual([]);
    expect(seen.at(-1)).toMatch(/^(fail|notice):.*storage is not reachable/);
  });

  it("stops the turn when its reply can no longer be written, instead of paying for an answer nobody sees", async () => {
    const { reply, seen } = recordingReply();
    const refused = new Error("Missing Permissions");
    let writes = 0;
    const stream = reply.stream;
    reply.stream = () => ({
      ...stream(),
      write: (d) => {
        writes++;
        seen.push(`text:${d}`);
      },
      broken: () => (writes >= 3 ? refused : undefined),
    });
    let yielded = 0;
    let closed = false;
    const provider: Provider = {
      name: "openai",
      listModels: async () => [],
      async *stream() {
        try {
          for (let i = 0; i < 50; i++) {
            yielded++;
            yield { type: "text", delta: `w${i} ` } as ModelEvent;
            await new Promise((r) => setTimeout(r, 1));
          }
          yield { type: "stop", reason: "end" } as ModelEvent;
        } finally {
          closed = true;
        }
      },
    };
    await dispatcherWith(provider).handle(message("e1", "hello", reply));
    expect(closed).toBe(true);
    expect(yielded).toBeLessThan(10);
    expect(seen.filter((x) => x.startsWith("text:"))).toHaveLength(3);
    expect(await ledger.get(KEY)).toBeUndefined();
  });

  it("leaves no turn record behind once the reply has ended", async () => {
    const { reply } = recordingReply();
    await dispatcherWith(new ScriptedProvider([say("Hi.")])).handle(message("e1", "hello", reply));
    expect(await ledger.pending()).toEqual([]);
  });

  it("records where the reply is before it writes on, and forgets it when the turn ends", async () => {
    const { reply } = recordingReply();
    const recorded: unknown[] = [];
    // The model answers only once the record was read: the turn cannot end (and forget it) first.
    let checked!: () => void;
    const read = new Promise<void>((r) => {
      checked = r;
    });
    const answering: Provider = {
      name: "openai",
      listModels: async () => [],
      async *stream() {
        await read;
        yield* say("Hi.");
      },
    };
    reply.onAddress = (record) => {
      void record({ messages: ["1712345678.000200"] }).then(async () => {
        recorded.push((await ledger.get(KEY))?.address);
        checked();
      });
    };
    await dispatcherWith(answering).handle(message("e1", "hello", reply));
    expect(recorded).toEqual([{ messages: ["1712345678.000200"] }]);
    expect(await ledger.get(KEY)).toBeUndefined();
  });
});

describe("clicks and form submissions", () => {
  function interaction(over: Partial<Interaction> = {}): Interaction & { said: string[] } {
    const said: string[] = [];
    return {
      id: "click-1",
      kind: "button",
      ref: "ask-123",
      value: "approve",
      platform: "slack",
      user: { id: "U1" },
      respond: async (t) => void said.push(t),
      said,
      ...over,
    };
  }

  const dispatcher = () => {
    const config = configSchema.parse({});
    const hub = new FunctionHub({});
    return new Dispatcher({
      agent: {} as Agent,
      sessions: {} as SessionRepository,
      ledger: {} as TurnLedger,
      lock: new LocalThreadLock(),
      dedupe: new MemoryDedupe(),
      // No approval waits: every ref is unknown.
      approvals: { get: async () => undefined } as unknown as ApprovalBook,
      hub,
      config,
    });
  };

  it("tells the person who clicked that nothing waits for the click any more", async () => {
    const click = interaction();
    await dispatcher().interact(click);
    expect(click.said).toEqual([EXPIRED_NOTE]);
  });

  it("ignores clicks from bots and a click delivered twice", async () => {
    const d = dispatcher();
    const bot = interaction({ id: "b", user: { id: "B1", bot: true } });
    const once = interaction({ id: "same" });
    const again = interaction({ id: "same" });
    await d.interact(bot);
    await d.interact(once);
    await d.interact(again);
    expect(bot.said).toEqual([]);
    expect([...once.said, ...again.said]).toEqual([EXPIRED_NOTE]);
  });
});
