import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { callTools, FunctionHub, say } from "../../../test/support/scripted.js";
import { Agent } from "../../agent/agent.js";
import type { ModelEvent, ModelRequest, Provider } from "../../agent/providers/provider.js";
import { configSchema } from "../../config.js";
import { ApprovalBook } from "../../store/approvals.js";
import { MemoryDedupe } from "../../store/dedupe.js";
import { openStore, type Store } from "../../store/index.js";
import { LocalThreadLock } from "../../store/locks.js";
import { SessionRepository } from "../../store/sessions.js";
import { TurnLedger } from "../../store/turns.js";
import type { Adapter, Question, Reply } from "../contract.js";
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

/** A Slack thread: what its replies wrote, the questions asked in it and what they say once settled. */
function thread() {
  const written: string[] = [];
  const asked: Question[] = [];
  const settled: Array<[string, string]> = [];
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
    settle: async (id, text) => void settled.push([id, text]),
  };
  const adapter: Adapter = {
    platform: "slack",
    start: async () => undefined,
    stop: async () => undefined,
    ready: () => true,
    replyFor: () => reply,
  };
  return { reply, adapter, written, asked, settled };
}

describe("a new conversation (/new) while a turn waits for approvals", () => {
  let dir: string;
  let store: Store;
  let dispatcher: Dispatcher | undefined;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "sb-new-"));
    store = await openStore(`sqlite://${join(dir, "s.sqlite")}`);
  });

  afterEach(async () => {
    await dispatcher?.drain(0);
    await store.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it("ends the question unanswered, and a later click on it runs nothing and says so", async () => {
    const config = configSchema.parse({});
    const sessions = new SessionRepository(store);
    const ledger = new TurnLedger(store);
    const hub = new FunctionHub({ fs__write: () => "written" });
    dispatcher = new Dispatcher({
      agent: new Agent({ config, hub, providerFor: () => writer, sessions }),
      sessions,
      ledger,
      lock: new LocalThreadLock(),
      dedupe: new MemoryDedupe(),
      approvals: new ApprovalBook(store),
      hub,
      config,
    });
    const slack = thread();
    await dispatcher.recoverInterrupted([slack.adapter]);
    await dispatcher.handle({
      id: "e1",
      key: KEY,
      platform: "slack",
      channel: "C1",
      user: ALICE,
      text: "write a.txt",
      attachments: [],
      reply: slack.reply,
    });
    const question = slack.asked[0];
    expect(question?.text).toContain("`write` from **fs**");
    expect((await ledger.get(KEY))?.waiting).toBeDefined();

    const said = await dispatcher.command({
      name: "new",
      key: KEY,
      platform: "slack",
      user: ALICE,
      channel: "C1",
    });
    expect(said).toBe("Started a new conversation. I have forgotten what was said before in this thread.");
    expect(slack.settled).toHaveLength(1);
    expect(slack.settled[0]?.[0]).toBe("q1");
    expect(slack.settled[0]?.[1]).toMatch(/^⏭️ `write` from \*\*fs\*\* was not run/);
    expect(await ledger.get(KEY)).toBeUndefined();

    const told: string[] = [];
    await dispatcher.interact({
      id: "click-1",
      kind: "button",
      ref: question!.ref,
      value: "approve",
      platform: "slack",
      user: ALICE,
      messageId: "q1",
      respond: async (t) => void told.push(t),
    });
    await dispatcher.settled();
    expect(told).toEqual(["This question is no longer waiting for an answer."]);
    expect(hub.calls).toEqual([]);
    expect(slack.written.join("")).not.toContain("The tool answered.");
    expect((await sessions.get(KEY))?.messages ?? []).toEqual([]);
  });
});
