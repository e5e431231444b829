import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FunctionHub } from "../../test/support/scripted.js";
import { Agent } from "../agent/agent.js";
import type { ModelEvent, ModelRequest, Provider } from "../agent/providers/provider.js";
import { configSchema } from "../config.js";
import { SwitchboardError } from "../core/errors.js";
import { ApprovalBook } from "../store/approvals.js";
import { type Dedupe, MemoryDedupe, StoreDedupe } from "../store/dedupe.js";
import { openStore, STORE_DOWN_SENTENCE, type Store } from "../store/index.js";
import { LocalThreadLock } from "../store/locks.js";
import { SessionRepository } from "../store/sessions.js";
import { createState, type StateStore } from "../store/state.js";
import { TurnLedger } from "../store/turns.js";
import type { Inbound, Reply } from "./contract.js";
import { Dispatcher, INTERRUPTED_NOTE } from "./dispatcher.js";

/** Answers "Echo: <text>" in pieces, slowly when the text says so, and stops when aborted. */
class EchoProvider implements Provider {
  readonly name = "openai" as const;
  readonly asked: string[] = [];
  /** Thrown by a summary request, when set. */
  summaryFails?: SwitchboardError;
  /** Thrown by the next question, once, when set. */
  nextFails?: SwitchboardError;
  async *stream(req: ModelRequest, signal: AbortSignal): AsyncIterable<ModelEvent> {
    const last = req.messages.at(-1);
    const text = last?.role === "user" ? last.content : "";
    if (this.summaryFails && req.tools.length === 0 && /summar/i.test(req.system)) throw this.summaryFails;
    if (req.tools.length === 0 && /title/i.test(req.system)) {
      yield { type: "text", delta: "A title" };
      return;
    }
    this.asked.push(text);
    const fails = this.nextFails;
    delete this.nextFails;
    if (fails) throw fails;
    for (const word of `Echo: ${text}`.split(/(?= )/)) {
      if (signal.aborted) throw new SwitchboardError("llm_aborted", "aborted");
      await new Promise((r) => setTimeout(r, text.includes("slow") ? 150 : 1));
      yield { type: "text", delta: word };
    }
    yield { type: "stop", reason: "end" };
  }
  async listModels() {
    return [];
  }
}

interface Written {
  text: string;
  failed?: string;
  notices: string[];
}

function inbound(id: string, text: string, key = "test:thread"): Inbound & { written: Written } {
  const written: Written = { text: "", notices: [] };
  const reply: Reply = {
    status: async () => undefined,
    stream: () => ({
      write: (d) => {
        written.text += d;
      },
      finish: async () => undefined,
      fail: async (m) => {
        written.failed = m;
      },
    }),
    upload: async () => undefined,
    title: async () => undefined,
    notice: async (t) => {
      written.notices.push(t);
    },
  };
  return {
    id,
    key,
    platform: "console",
    channel: "c",
    user: { id: "u" },
    text,
    attachments: [],
    reply,
    written,
  };
}

describe("the dispatcher", () => {
  let dir: string;
  let store: Store;
  let provider: EchoProvider;
  let dispatcher: Dispatcher;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "sb-dispatch-"));
    store = await openStore(`sqlite://${join(dir, "s.sqlite")}`);
    provider = new EchoProvider();
    const config = configSchema.parse({});
    const sessions = new SessionRepository(store);
    const hub = new FunctionHub({});
    const agent = new Agent({ config, hub, providerFor: () => provider, sessions });
    dispatcher = new Dispatcher({
      agent,
      sessions,
      ledger: new TurnLedger(store),
      lock: new LocalThreadLock(),
      dedupe: new MemoryDedupe(),
      approvals: new ApprovalBook(store),
      hub,
      config,
    });
  });

  afterEach(async () => {
    await store.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers an event delivered twice, or under two ids of one message, once", async () => {
    const a = inbound("ev1", "hello");
    const b = inbound("ev1", "hello");
    const c = { ...inbound("ev2", "hello"), aliases: ["C1:111"] };
    const d = { ...inbound("ev3", "hello"), aliases: ["C1:111"] };
    await Promise.all([
      dispatcher.handle(a),
      dispatcher.handle(b),
      dispatcher.handle(c),
      dispatcher.handle(d),
    ]);
    expect(provider.asked).toEqual(["hello", "hello"]);
    expect([a, b].filter((x) => x.written.text).length).toBe(1);
    expect([c, d].filter((x) => x.written.text).length).toBe(1);
  });

  it("knows a thread once its opening message is taken, before that message's turn has begun", async () => {
    // A follow-up can come (to another replica) while the mention still waits for its turn.
    expect(await dispatcher.knows("test:opened", "C1:222")).toBe(false);
    expect(await dispatcher.firstSight("C1:222")).toBe(true);
    expect(await dispatcher.knows("test:opened", "C1:222")).toBe(true);
    // Without its opening, a thread with no session and no turn is not known.
    expect(await dispatcher.knows("test:opened")).toBe(false);
  });

  it("queues messages of a busy thread and answers every one, in order", async () => {
    const msgs = ["slow one", "two", "three"].map((t, i) => inbound(`q${i}`, t));
    await Promise.all(msgs.map((m) => dispatcher.handle(m)));
    expect(msgs.map((m) => m.written.text)).toEqual(["Echo: slow one", "Echo: two", "Echo: three"]);
    expect(provider.asked).toEqual(["slow one", "two", "three"]);
  });

  it("counts the turns waiting behind a busy thread, and none once they have run", async () => {
    const first = dispatcher.handle(inbound("w1", "slow first"));
    const rest = [dispatcher.handle(inbound("w2", "second")), dispatcher.handle(inbound("w3", "third"))];
    const other = dispatcher.handle(inbound("w4", "elsewhere", "test:other"));
    await new Promise((r) => setTimeout(r, 50));
    expect(dispatcher.queueStats()).toEqual({ queued: 2, longest: 2 });
    await Promise.all([first, ...rest, other]);
    expect(dispatcher.queueStats()).toEqual({ queued: 0, longest: 0 });
  });

  it("on drain ends the running turn and the queued one with the restart note", async () => {
    const running = inbound("d1", "slow answer with many words in it to take a while");
    const queued = inbound("d2", "queued behind it");
    const done = Promise.all([dispatcher.handle(running), dispatcher.handle(queued)]);
    await new Promise((r) => setTimeout(r, 400));
    const { interrupted } = await dispatcher.drain(100);
    await done;
    expect(interrupted).toBe(2);
    expect(running.written.text.startsWith("Echo: slow")).toBe(true);
    expect(running.written.failed).toBe(INTERRUPTED_NOTE);
    expect(queued.written.failed).toBe(INTERRUPTED_NOTE);
    expect(provider.asked).not.toContain("queued behind it");
  });

  /** A dispatcher of its own on the test's store, with this lock or dedupe. */
  const dispatcherWith = (parts: { lock?: LocalThreadLock; dedupe?: Dedupe; config?: unknown }) => {
    const config = configSchema.parse(parts.config ?? {});
    const sessions = new SessionRepository(store);
    const hub = new FunctionHub({});
    return new Dispatcher({
      agent: new Agent({ config, hub, providerFor: () => provider, sessions }),
      sessions,
      ledger: new TurnLedger(store),
      lock: parts.lock ?? new LocalThreadLock(),
      dedupe: parts.dedupe ?? new MemoryDedupe(),
      approvals: new ApprovalBook(store),
      hub,
      config,
    });
  };

  it("lets an approver listed by Discord role or Slack user group stop an answer with the stop command", async () => {
    const approving = dispatcherWith({
      config: { approvals: { approvers: [{ discordRoles: ["R_OPS"], slackUserGroups: ["S_OPS"] }] } },
    });
    const stopBy = (
      key: string,
      platform: "discord" | "slack",
      who: { roles?: readonly string[]; groups?: readonly string[] },
    ) =>
      approving.command({
        name: "stop",
        key,
        platform,
        user: { id: "U_BOB", name: "bob" },
        channel: "c",
        from: { dm: false, ...(who.roles ? { roles: [...who.roles] } : {}) },
        ...(who.groups ? { inGroups: async (g: string[]) => g.some((x) => who.groups?.includes(x)) } : {}),
      });
    for (const [key, platform, who] of [
      ["test:by-role", "discord", { roles: ["R_OPS"] }],
      ["test:by-group", "slack", { groups: ["S_OPS"] }],
    ] as const) {
      const m = { ...inbound(`ev-${key}`, "a slow answer please", key), platform };
      const handled = approving.handle(m);
      await vi.waitFor(() => expect(m.written.text.length).toBeGreaterThan(0));
      expect(await stopBy(key, platform, {})).toBe("Only u or an approver can stop this answer.");
      expect(await stopBy(key, platform, who)).toBe("Stopped.");
      await handled;
      expect(m.written.failed).toBe("Stopped by bob.");
    }
  });

  describe("a message Slack delivers again, having had no acknowledgement", () => {
    /** A replica on the test's store: its lock names it, and counts every other process gone. */
    const replica = () => {
      const lock = new LocalThreadLock();
      return {
        lock,
        dedupe: new StoreDedupe(store, lock.owner),
        dispatcher: undefined as unknown as Dispatcher,
      };
    };
    const started = () => {
      const r = replica();
      r.dispatcher = dispatcherWith({ lock: r.lock, dedupe: r.dedupe });
      return r;
    };
    /** The replica's turns wait at the thread's lock until the returned wake is called. */
    const stalledAtLock = (r: ReturnType<typeof replica>) => {
      let wake!: () => void;
      const stalled = new Promise<void>((resolve) => {
        wake = resolve;
      });
      const run = r.lock.run.bind(r.lock);
      r.lock.run = (async (...args: Parameters<typeof run>) => {
        await stalled;
        return run(...args);
      }) as typeof run;
      return wake;
    };

    it("is said stored once its turn's record is written, its claim marked held in the same write, and left to that process", async () => {
      const a = started();
      const m = { ...inbound("ev-held", "hello"), onStored: vi.fn() };
      const claiming = vi.spyOn(createState(store).constructor.prototype as StateStore, "setClaiming");
      await a.dispatcher.handle(m);
      expect(m.onStored).toHaveBeenCalledTimes(1);
      expect(claiming).toHaveBeenCalledTimes(1);
      expect(claiming.mock.calls[0]![1]).toBe("turn:test:thread");
      expect(claiming.mock.calls[0]![3].keys).toEqual(["dedupe:ev-held"]);
      claiming.mockRestore();
      // Its process stopped after it; the redelivery finds the message held.
      const b = started();
      const again = { ...inbound("ev-held", "hello"), redelivered: true };
      await b.dispatcher.handle(again);
      expect(provider.asked).toEqual(["hello"]);
      expect(again.written.text).toBe("");
    });

    it("has its other claims (Discord's thread opening) marked held with it, so that a replica waiting on one leaves it", async () => {
      const a = started();
      expect(await a.dedupe.firstSight("open:ev-claims")).toBe(true);
      const m = { ...inbound("ev-claims", "hello"), claims: ["open:ev-claims"] };
      await a.dispatcher.handle(m);
      const state = createState(store);
      for (const id of ["ev-claims", "open:ev-claims"])
        expect(await state.get(`dedupe:${id}`)).toMatch(/^held:/);
      // Its process stopped after it: the claim is held, not a dead process's to take over.
      const b = started();
      expect(await b.dispatcher.redelivered("open:ev-claims")).toBe(false);
      expect(provider.asked).toEqual(["hello"]);
    });

    it("writes nothing for a message that another process took over while this one stalled before storing it", async () => {
      const a = started();
      // Process a takes the message, then stalls on its way to the thread's lock (and the store).
      const wake = stalledAtLock(a);
      const m = inbound("ev-stall", "hello");
      const handled = a.dispatcher.handle(m);
      // Slack delivers it again to process b, to which a's silence looks like a death.
      const b = started();
      const again = { ...inbound("ev-stall", "hello"), redelivered: true };
      await b.dispatcher.handle(again);
      expect(again.written.text).toBe("Echo: hello");
      wake();
      await handled;
      expect(m.written).toEqual({ text: "", notices: [] });
      expect(await new TurnLedger(store).get("test:thread")).toBeUndefined();
    });

    it("shows no error either when the model fails the stalled process's question before it learns the message is another's", async () => {
      const a = started();
      const wake = stalledAtLock(a);
      const m = inbound("ev-stall-fail", "hello");
      const handled = a.dispatcher.handle(m);
      const b = started();
      const again = { ...inbound("ev-stall-fail", "hello"), redelivered: true };
      await b.dispatcher.handle(again);
      expect(again.written.text).toBe("Echo: hello");
      // The stalled process's question fails at once, while the claim's check is on its way.
      provider.nextFails = new SwitchboardError("llm_unavailable", "The model is not answering.");
      wake();
      await handled;
      expect(provider.asked).toEqual(["hello", "hello"]);
      expect(m.written).toEqual({ text: "", notices: [] });
      expect(await new TurnLedger(store).get("test:thread")).toBeUndefined();
    });

    it("is answered by another process when its own was killed as it wrote the turn's record", async () => {
      const a = started();
      // Killed in the middle of the write: the record never lands, nor does anything after it.
      const writes = vi
        .spyOn(createState(store).constructor.prototype as StateStore, "setClaiming")
        .mockImplementation(() => new Promise(() => {}));
      const m = inbound("ev-killed", "hello");
      void a.dispatcher.handle(m);
      await vi.waitFor(() => expect(writes).toHaveBeenCalled());
      writes.mockRestore();
      // Its claim was not marked held apart from the record: the redelivery is the others' to answer.
      const b = started();
      const again = { ...inbound("ev-killed", "hello"), redelivered: true };
      await b.dispatcher.handle(again);
      expect(again.written.text).toBe("Echo: hello");
      expect(m.written.text).toBe("");
    });

    it("is answered when the process that took it stopped before storing it, and only as a redelivery", async () => {
      // The dead process got as far as the duplicate check, no further.
      const dead = replica();
      expect(await dead.dedupe.firstSight("ev-lost")).toBe(true);
      const copy = inbound("ev-lost", "lost?");
      await started().dispatcher.handle(copy);
      expect(copy.written.text).toBe("");
      const b = started();
      const again = { ...inbound("ev-lost", "lost?"), redelivered: true, onStored: vi.fn() };
      await b.dispatcher.handle(again);
      expect(again.written.text).toBe("Echo: lost?");
      expect(again.onStored).toHaveBeenCalledTimes(1);
      // A third delivery, to a third process, leaves it to the one that answered.
      const c = started();
      const third = { ...inbound("ev-lost", "lost?"), redelivered: true };
      await c.dispatcher.handle(third);
      expect(third.written.text).toBe("");
      expect(provider.asked).toEqual(["lost?"]);
    });
  });

  it("on drain, notes a message still being checked for duplicates before it returns", async () => {
    const slow = new (class extends MemoryDedupe {
      override async firstSight(id: string): Promise<boolean> {
        await new Promise((r) => setTimeout(r, 150));
        return super.firstSight(id);
      }
    })();
    const stopping = dispatcherWith({ dedupe: slow });
    const m = inbound("late1", "hello while stopping");
    const handled = stopping.handle(m);
    await stopping.drain(2_000);
    // The drain returned only once the message had its note: the process may exit now.
    expect(m.written.failed).toBe(INTERRUPTED_NOTE);
    await handled;
    expect(provider.asked).toEqual([]);
  });

  it("a message whose wait for its thread fails while stopping gets the restart note, not the error", async () => {
    let closeStore!: () => void;
    const storeClosed = new Promise<void>((r) => {
      closeStore = r;
    });
    // The thread's lock is held elsewhere until the store closes under the stopping process.
    const lock = new (class extends LocalThreadLock {
      override async run<T>(): Promise<T> {
        await storeClosed;
        throw new Error("The client is closed");
      }
    })();
    const stopping = dispatcherWith({ lock });
    const m = inbound("w1", "waiting for the thread");
    const handled = stopping.handle(m);
    await new Promise((r) => setTimeout(r, 50));
    const drained = stopping.drain(100);
    await new Promise((r) => setTimeout(r, 150));
    closeStore();
    await Promise.all([drained, handled]);
    expect(m.written.failed).toBe(INTERRUPTED_NOTE);
    expect(m.written.notices).toEqual([]);
    expect(provider.asked).toEqual([]);
  });

  it("tells the user in a sentence when the store fails before the answer starts", async () => {
    await store.close();
    const m = inbound("s1", "hello");
    await dispatcher.handle(m);
    // The turn's record cannot be written, so no answer was started: the sentence is a notice.
    expect(m.written).toEqual({
      text: "",
      notices: [STORE_DOWN_SENTENCE],
    });
    expect(provider.asked).toEqual([]);
  });
  it("says why /compact could not fold: the model, or what else went wrong, in its own words", async () => {
    for (const [i, text] of ["one", "two", "three", "four"].entries())
      await dispatcher.handle(inbound(`ev${i}`, text));
    const compact = () =>
      dispatcher.command({
        name: "compact",
        key: "test:thread",
        platform: "slack",
        user: { id: "U1" },
        channel: "C1",
      });
    provider.summaryFails = new SwitchboardError("llm_unavailable", "the model is down");
    expect(await compact()).toBe(
      "I could not compress the conversation right now (the model did not answer). Nothing was lost; try again later.",
    );
    provider.summaryFails = new SwitchboardError("store_unavailable", "no store", {
      userMessage:
        "I cannot reach my storage right now, so nothing was changed. Please try again in a minute.",
    });
    expect(await compact()).toBe(
      "I cannot reach my storage right now, so nothing was changed. Please try again in a minute.",
    );
    provider.summaryFails = undefined;
    expect(await compact()).toMatch(/^Folded \d+ older messages into the summary\.$/);
  });
});
