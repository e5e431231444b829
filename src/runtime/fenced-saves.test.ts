import { afterEach, expect, it } from "vitest";
import { callTools, ScriptedProvider, say } from "../../test/support/scripted.js";
import { Agent } from "../agent/agent.js";
import type { Provider } from "../agent/providers/provider.js";
import { configSchema } from "../config.js";
import type { ChatMessage } from "../core/messages.js";
import { ApprovalBook } from "../store/approvals.js";
import { MemoryDedupe } from "../store/dedupe.js";
import type { Store } from "../store/index.js";
import { createThreadLock } from "../store/locks.js";
import { SessionRepository } from "../store/sessions.js";
import { createState } from "../store/state.js";
import { describeEachStore, type TestStores, testStores } from "../store/testing.js";
import { TurnLedger } from "../store/turns.js";
import { Dispatcher } from "./dispatcher.js";
import { gate, StallingSessions } from "./stall.test-helper.js";
import { ALICE, aliceSays, fakeSlack, HintedHub, KEY } from "./takeover.test-helper.js";
import { LOST_THREAD_NOTE } from "./thread-commands.js";

/*
 * A process that stalls under a thread's lock past its heartbeat, just before it saves the
 * thread's session, while another replica takes the thread and answers in it: what it then
 * saves must not land over that answer.
 */

const config = configSchema.parse({
  approvals: { rules: [{ server: "*", mode: "always" }] },
  models: { allowed: ["other-model"] },
});

const userTexts = (messages: ChatMessage[]) =>
  messages.filter((m) => m.role === "user").map((m) => m.content);

describeEachStore("a save under a thread's lock lost while it stalled, on %s", (kind) => {
  let stores: TestStores;
  const dispatchers: Dispatcher[] = [];
  afterEach(async () => {
    await Promise.all(dispatchers.splice(0).map((d) => d.drain(0)));
    await stores.dispose();
  });

  /** A replica: its own store connection, lock, sessions and dispatcher on the shared data. */
  async function replica(provider: Provider) {
    const store: Store = await stores.open();
    const sessions = new StallingSessions(store);
    const hub = new HintedHub({ fs__read: () => "the file says hi" });
    const agent = new Agent({ config, hub, providerFor: () => provider, sessions });
    const dispatcher = new Dispatcher({
      agent,
      sessions,
      ledger: new TurnLedger(store),
      lock: createThreadLock(store),
      dedupe: new MemoryDedupe(),
      approvals: new ApprovalBook(store),
      hub,
      config,
    });
    dispatchers.push(dispatcher);
    const slack = fakeSlack();
    // Its platform: a turn it takes over is answered in a reply rebuilt for it.
    await dispatcher.recoverInterrupted([slack.adapter]);
    return { store, sessions, dispatcher, slack };
  }

  /** Titled already, with one exchange: no title is made after the turns of these tests. */
  async function answeredOnce(sessions: SessionRepository): Promise<void> {
    const session = await sessions.getOrCreate(KEY);
    session.title = "Titled";
    session.messages.push(
      { role: "user", content: "the first question" },
      { role: "assistant", content: "hi" },
    );
    session.turns = 1;
    await sessions.save(session);
  }

  /** Another replica takes the thread, as it takes the lease of a process it saw stop beating. */
  async function takeThread(store: Store): Promise<void> {
    const state = createState(store);
    const lease = await state.lockHolder(KEY);
    expect(lease).toBeDefined();
    await state.releaseLock(lease!);
  }

  async function stored() {
    return (await new SessionRepository(await stores.open()).get(KEY))!;
  }

  it.each([
    ["its end", [say("The answer of the stalled process.")]],
    ["a tool step's checkpoint", [callTools(["fs__read", {}]), say("The answer of the stalled process.")]],
  ])(
    "a turn that stalls before saving %s never saves over the turn of the replica that took the thread, and stops",
    async (_, script) => {
      stores = testStores(kind);
      const stalledProvider = new ScriptedProvider(script);
      const a = await replica(stalledProvider);
      const taker = new ScriptedProvider([say("Answered again by the taker."), say("The third answer.")]);
      const b = await replica(taker);
      await answeredOnce(a.sessions);
      const go = gate();
      const stalled = a.sessions.stallNextSave(go.passed);
      const handled = a.dispatcher.handle(aliceSays("e2", "the second question", a.slack.reply));
      await stalled;
      await takeThread(b.store);
      // The taker finishes the stalled turn first (from its record), then answers the next message.
      await b.dispatcher.handle(aliceSays("e3", "the third question", b.slack.reply));
      go.open();
      await handled;

      const session = await stored();
      expect(userTexts(session.messages)).toEqual([
        "the first question",
        "the second question",
        "the third question",
      ]);
      expect(session.messages.at(-1)).toMatchObject({ role: "assistant", content: "The third answer." });
      expect(JSON.stringify(session.messages)).not.toContain("The answer of the stalled process.");
      // Stopped once its write was refused: the model is asked nothing more there.
      expect(stalledProvider.requests).toHaveLength(1);
      expect(taker.requests).toHaveLength(2);
      expect(await new TurnLedger(await stores.open()).get(KEY)).toBeUndefined();
    },
  );

  it.each([
    ["model", "other-model", "save"],
    ["title", undefined, "save"],
    ["new", undefined, "reset"],
  ] as const)(
    "/%s stalled before its save changes nothing over the turn the replica that took the thread answered",
    async (name, arg, write) => {
      stores = testStores(kind);
      // Asked only by /title, for the title it then fails to save.
      const a = await replica(new ScriptedProvider([say("A title from before")]));
      const b = await replica(new ScriptedProvider([say("The second answer.")]));
      await answeredOnce(a.sessions);
      const go = gate();
      const stalled =
        write === "save" ? a.sessions.stallNextSave(go.passed) : a.sessions.stallNextReset(go.passed);
      const said = a.dispatcher.command({
        name,
        key: KEY,
        platform: "slack",
        user: ALICE,
        channel: "C1",
        ...(arg ? { arg } : {}),
      });
      await stalled;
      await takeThread(b.store);
      await b.dispatcher.handle(aliceSays("e2", "the second question", b.slack.reply));
      go.open();
      const reply = await said;

      // The taker's answer is there, and nothing the command did landed over it.
      const session = await stored();
      expect(userTexts(session.messages)).toEqual(["the first question", "the second question"]);
      expect(session).toMatchObject({ title: "Titled", generation: 0 });
      expect(session.settings.model).toBeUndefined();
      expect(reply).toBe(LOST_THREAD_NOTE);
    },
  );
});
