import { afterEach, expect, it, vi } from "vitest";
import { callTools, FunctionHub, say } from "../../../test/support/scripted.js";
import { Agent } from "../../agent/agent.js";
import type { ModelEvent, ModelRequest, Provider } from "../../agent/providers/provider.js";
import { configSchema } from "../../config.js";
import { ApprovalBook } from "../../store/approvals.js";
import { MemoryDedupe } from "../../store/dedupe.js";
import { createThreadLock } from "../../store/locks.js";
import { SessionRepository } from "../../store/sessions.js";
import { describeEachStore, type TestStores, testStores } from "../../store/testing.js";
import { TurnLedger } from "../../store/turns.js";
import type { Adapter, Interaction, Question, Reply } from "../contract.js";
import { Dispatcher } from "../dispatcher.js";

const KEY = "slack:T1:C1:1712345678.000100";
const ALICE = { id: "U1", name: "alice" };

/** Asks to write a.txt, and answers once the tool has said something. */
const writer: Provider = {
  name: "openai",
  listModels: async () => [],
  async *stream(req: ModelRequest): AsyncIterable<ModelEvent> {
    if (req.tools.length === 0) yield* say("A title");
    else if (req.messages.at(-1)?.role === "tool") yield* say("The tool answered.");
    else yield* callTools(["fs__write", { path: "a.txt" }]);
  },
};

function gate(): { open: () => void; passed: Promise<void> } {
  let open!: () => void;
  const passed = new Promise<void>((r) => {
    open = r;
  });
  return { open, passed };
}

/**
 * The Slack thread as one replica writes to it. Its edits of a question wait for `edits`,
 * as a `chat.update` waits out a rate limit, and `editing` resolves once one is asked for.
 */
function thread(edits: Promise<void> = Promise.resolve()) {
  const written: string[] = [];
  const asked: Question[] = [];
  const editing = gate();
  const reply: Reply = {
    status: async () => undefined,
    stream: () => ({
      write: (d) => void written.push(d),
      finish: async () => undefined,
      fail: async (m) => void written.push(`<fail:${m}>`),
    }),
    upload: async () => undefined,
    title: async () => undefined,
    notice: async () => undefined,
    ask: async (q) => {
      asked.push(q);
      return `q${asked.length}`;
    },
    settle: async () => {
      editing.open();
      await edits;
    },
  };
  const adapter: Adapter = {
    platform: "slack",
    start: async () => undefined,
    stop: async () => undefined,
    ready: () => true,
    replyFor: () => reply,
  };
  return { reply, adapter, written, asked, editing: editing.passed };
}

describeEachStore(
  "an approval decided in a replica that stops before going on with its turn, on %s",
  (kind) => {
    let stores: TestStores;
    const running: Dispatcher[] = [];
    afterEach(async () => {
      await Promise.all(running.splice(0).map((d) => d.drain(0)));
      await stores.dispose();
    });

    /** A replica on the shared store, started: it beats and watches the store's turns from now on. */
    async function replica(slack: ReturnType<typeof thread>) {
      const store = await stores.open();
      // Questions expire after the default ten minutes: nothing here may wait for that.
      const config = configSchema.parse({});
      const sessions = new SessionRepository(store);
      const lock = createThreadLock(store);
      const hub = new FunctionHub({ fs__write: () => "written" });
      const dispatcher = new Dispatcher({
        agent: new Agent({ config, hub, providerFor: () => writer, sessions }),
        sessions,
        ledger: new TurnLedger(store),
        lock,
        dedupe: new MemoryDedupe(),
        approvals: new ApprovalBook(store),
        hub,
        config,
      });
      running.push(dispatcher);
      await dispatcher.recoverInterrupted([slack.adapter]);
      return { dispatcher, hub, lock, ledger: new TurnLedger(store), book: new ApprovalBook(store) };
    }

    /** Alice's message parks its turn on the question in `slack`; her click on Approve. */
    async function asked(stopping: Dispatcher, slack: ReturnType<typeof thread>): Promise<Interaction> {
      await stopping.handle({
        id: "e1",
        key: KEY,
        platform: "slack",
        channel: "C1",
        user: ALICE,
        text: "write a.txt",
        attachments: [],
        reply: slack.reply,
      });
      await stopping.settled();
      const question = slack.asked[0]!;
      return {
        id: "click-1",
        kind: "button",
        ref: question.ref,
        value: "approve",
        platform: "slack",
        user: ALICE,
        messageId: "q1",
        respond: async () => undefined,
      };
    }

    /**
     * Her Approve is taken and recorded, and the replica stops while the question's edit
     * waits, so that the turn is never gone on with there.
     */
    async function approvedAsItStops(
      stopping: Dispatcher,
      slack: ReturnType<typeof thread>,
      edit: () => void,
    ) {
      const clicked = stopping.interact(await asked(stopping, slack));
      await slack.editing;
      await stopping.drain(0);
      edit();
      await clicked;
    }

    it("is gone on with by another replica within seconds, not at the question's expiry", async () => {
      stores = testStores(kind);
      const edits = gate();
      const onStopping = thread(edits.passed);
      const stopping = await replica(onStopping);
      const onLive = thread();
      const live = await replica(onLive);
      await approvedAsItStops(stopping.dispatcher, onStopping, edits.open);
      // Decided, and still parked: nobody has gone on with it.
      const waiting = (await live.ledger.get(KEY))?.waiting;
      expect(await live.book.decision(waiting!.refs[Object.keys(waiting!.refs)[0]!]!)).toMatchObject({
        kind: "approve",
      });

      await vi.waitFor(() => expect(onLive.written.join("")).toContain("The tool answered."), {
        timeout: 20_000,
        interval: 100,
      });
      await live.dispatcher.settled();
      expect(live.hub.calls.map((c) => c.name)).toEqual(["fs__write"]);
      expect(stopping.hub.calls).toEqual([]);
      expect(await live.ledger.get(KEY)).toBeUndefined();
    });

    it("is gone on with by the same process when it starts again", async () => {
      stores = testStores(kind);
      const edits = gate();
      const before = thread(edits.passed);
      const stopped = await replica(before);
      await approvedAsItStops(stopped.dispatcher, before, edits.open);

      const after = thread();
      const restarted = await replica(after);
      await vi.waitFor(() => expect(after.written.join("")).toContain("The tool answered."), {
        timeout: 20_000,
        interval: 50,
      });
      await restarted.dispatcher.settled();
      expect(restarted.hub.calls.map((c) => c.name)).toEqual(["fs__write"]);
      expect(stopped.hub.calls).toEqual([]);
      expect(await restarted.ledger.get(KEY)).toBeUndefined();
    });

    it("is left parked, not gone on with, when its process began to stop while it waited for the thread", async () => {
      stores = testStores(kind);
      const onStopping = thread();
      const stopping = await replica(onStopping);
      const onLive = thread();
      const live = await replica(onLive);
      const click = await asked(stopping.dispatcher, onStopping);
      // The thread is busy in the live replica: the decided turn waits there for its lock.
      const busy = gate();
      const holding = live.lock.run(KEY, () => busy.passed);
      await stopping.dispatcher.interact(click);
      const drained = stopping.dispatcher.drain(0);
      // Let go once the stop has aborted what waits: the lock comes while the process stops.
      await new Promise((r) => setTimeout(r, 1_000));
      busy.open();
      await holding;
      await drained;

      await vi.waitFor(() => expect(onLive.written.join("")).toContain("The tool answered."), {
        timeout: 20_000,
        interval: 100,
      });
      await live.dispatcher.settled();
      expect(stopping.hub.calls).toEqual([]);
      expect(live.hub.calls.map((c) => c.name)).toEqual(["fs__write"]);
      expect(onStopping.written.join("")).not.toContain("The tool answered.");
    });
  },
);
