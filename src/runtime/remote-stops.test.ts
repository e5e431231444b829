import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FunctionHub } from "../../test/support/scripted.js";
import { Agent } from "../agent/agent.js";
import type { ModelEvent, Provider } from "../agent/providers/provider.js";
import { configSchema } from "../config.js";
import { ApprovalBook } from "../store/approvals.js";
import { MemoryDedupe } from "../store/dedupe.js";
import { openStore, type Store } from "../store/index.js";
import { createThreadLock } from "../store/locks.js";
import { SessionRepository } from "../store/sessions.js";
import { StopRequests } from "../store/stop-requests.js";
import { TurnLedger } from "../store/turns.js";
import type { Adapter, Inbound, Interaction, Reply } from "./contract.js";
import { Dispatcher } from "./dispatcher.js";

const ALICE = { id: "U1", name: "alice" };
const BOB = { id: "U2", name: "bob" };

/** Writes a word every 50 ms until it is stopped. */
const endless: Provider = {
  name: "openai",
  listModels: async () => [],
  async *stream(_req, signal): AsyncIterable<ModelEvent> {
    for (let i = 0; ; i++) {
      if (signal.aborted) throw signal.reason;
      yield { type: "text", delta: `w${i} ` };
      await new Promise((r) => setTimeout(r, 50));
    }
  },
};

/** A message of alice's in thread `key`, and what its reply shows. */
function asked(id: string, key: string) {
  const seen = { text: "", ended: "", stopRef: "" };
  const reply: Reply = {
    status: async () => undefined,
    stream: () => ({
      write: (d) => {
        seen.text += d;
      },
      finish: async () => undefined,
      fail: async (m) => {
        seen.ended = m;
      },
    }),
    upload: async () => undefined,
    title: async () => undefined,
    notice: async () => undefined,
    offerStop: (ref) => {
      seen.stopRef = ref;
    },
  };
  const inbound: Inbound = {
    id,
    key,
    platform: "slack",
    channel: "C1",
    user: ALICE,
    text: "talk",
    attachments: [],
    reply,
  };
  return { inbound, seen };
}

const platform: Adapter = {
  platform: "slack",
  start: async () => undefined,
  stop: async () => undefined,
  ready: () => true,
};

describe("Stop reaching another replica than the one writing the answer", () => {
  let dir: string;
  let store: Store;
  const replicas: Dispatcher[] = [];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "sb-remote-stop-"));
    store = await openStore(`sqlite://${join(dir, "s.sqlite")}`);
  });

  afterEach(async () => {
    await Promise.all(replicas.splice(0).map((d) => d.drain(0)));
    await store.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  async function replica(
    settings: unknown = {},
    provider: Provider = endless,
    stops = new StopRequests(store),
  ): Promise<Dispatcher> {
    const config = configSchema.parse(settings);
    const sessions = new SessionRepository(store);
    const hub = new FunctionHub({});
    const dispatcher = new Dispatcher({
      agent: new Agent({ config, hub, providerFor: () => provider, sessions }),
      sessions,
      ledger: new TurnLedger(store),
      lock: createThreadLock(store),
      dedupe: new MemoryDedupe(),
      approvals: new ApprovalBook(store),
      stops,
      hub,
      config,
    });
    replicas.push(dispatcher);
    await dispatcher.recoverInterrupted([platform]);
    return dispatcher;
  }

  it("stops the answer from the stop command and from its Stop button, for its asker only", async () => {
    const writing = await replica();
    const other = await replica();
    // Each has seen the other beat.
    await new Promise((r) => setTimeout(r, 1_500));

    const first = asked("e1", "slack:T1:C1:1.1");
    const answering = writing.handle(first.inbound);
    await vi.waitFor(() => expect(first.seen.text.length).toBeGreaterThan(0), { timeout: 5_000 });
    const stop = (user: typeof ALICE) =>
      other.command({ name: "stop", key: first.inbound.key, platform: "slack", user, channel: "C1" });
    expect(await stop(BOB)).toBe("Only alice or an approver can stop this answer.");
    expect(await stop(ALICE)).toBe("Stopped.");
    await answering;
    expect(first.seen.ended).toBe("Stopped by alice.");

    const second = asked("e2", "slack:T1:C1:2.2");
    const answering2 = writing.handle(second.inbound);
    await vi.waitFor(() => expect(second.seen.stopRef).not.toBe(""), { timeout: 5_000 });
    await vi.waitFor(() => expect(second.seen.text.length).toBeGreaterThan(0), { timeout: 5_000 });
    const told: string[] = [];
    const click: Interaction = {
      id: "click-1",
      kind: "button",
      ref: second.seen.stopRef,
      value: "stop",
      platform: "slack",
      user: ALICE,
      respond: async (t) => void told.push(t),
    };
    await other.interact(click);
    await answering2;
    expect(second.seen.ended).toBe("Stopped by alice.");
    // The answer itself says it stopped: nothing more to tell the clicker.
    expect(told).toEqual([]);
  }, 20_000);
  it("stops the answer for an approver listed by Slack user group (Slack's own stop button reaching another replica)", async () => {
    const approvers = { approvals: { approvers: [{ platform: "slack", slackUserGroups: ["S_OPS"] }] } };
    const writing = await replica(approvers);
    const other = await replica(approvers);
    await new Promise((r) => setTimeout(r, 1_500));
    const first = asked("e1", "slack:T1:C1:1.1");
    const answering = writing.handle(first.inbound);
    await vi.waitFor(() => expect(first.seen.text.length).toBeGreaterThan(0), { timeout: 5_000 });
    const inOps = async (groups: string[]) => groups.includes("S_OPS");
    expect(await other.stop(first.inbound.key, BOB)).toBe("Only alice or an approver can stop this answer.");
    expect(await other.stop(first.inbound.key, BOB, inOps)).toBe("");
    await answering;
    expect(first.seen.ended).toBe("Stopped by bob.");
  }, 20_000);

  it("stops from a Stop button offered before another replica joined", async () => {
    const writing = await replica();
    const first = asked("e1", "slack:T1:C1:1.1");
    const answering = writing.handle(first.inbound);
    await vi.waitFor(() => expect(first.seen.stopRef).not.toBe(""), { timeout: 5_000 });
    await vi.waitFor(() => expect(first.seen.text.length).toBeGreaterThan(0), { timeout: 5_000 });
    // A second replica starts (a rolling deploy) while the answer is written, and the
    // writing one sees it beat.
    const other = await replica();
    await new Promise((r) => setTimeout(r, 1_500));
    const told: string[] = [];
    await other.interact({
      id: "click-1",
      kind: "button",
      ref: first.seen.stopRef,
      value: "stop",
      platform: "slack",
      user: ALICE,
      respond: async (t) => void told.push(t),
    });
    await answering;
    expect(first.seen.ended).toBe("Stopped by alice.");
    expect(told).toEqual([]);
  }, 20_000);

  it("a Stop left for an answer that ended before its replica took it stops nothing after it", async () => {
    // The writing replica's look for requests waits while the answer ends and the next one starts.
    let looked = 0;
    let lookOn!: () => void;
    const looking = new Promise<void>((r) => {
      lookOn = r;
    });
    class HeldStops extends StopRequests {
      override async asked() {
        looked++;
        await looking;
        return super.asked();
      }
    }
    const ends = new Map<string, () => void>();
    const untilEnded: Provider = {
      name: "openai",
      listModels: async () => [],
      async *stream(req, signal): AsyncIterable<ModelEvent> {
        const last = req.messages.findLast((m) => m.role === "user");
        const text = typeof last?.content === "string" ? last.content : "";
        yield { type: "text", delta: `On ${text}.` };
        await new Promise<void>((resolve, reject) => {
          ends.set(text, resolve);
          signal.addEventListener("abort", () => reject(signal.reason));
        });
        yield { type: "stop", reason: "end" };
      },
    };
    const writing = await replica({}, untilEnded, new HeldStops(store));
    const other = await replica();
    const key = "slack:T1:C1:1.1";
    const first = asked("e1", key);
    first.inbound.text = "first";
    const answering = writing.handle(first.inbound);
    await vi.waitFor(() => expect(ends.has("first")).toBe(true), { timeout: 5_000 });
    await vi.waitFor(() => expect(looked).toBeGreaterThan(0), { timeout: 5_000 });

    // Slack's own stop button and the stop command carry no button: the request names the thread.
    expect(await other.stop(key, ALICE)).toBe("");
    ends.get("first")!();
    await answering;
    expect(first.seen.ended).toBe("");

    const second = asked("e2", key);
    second.inbound.text = "second";
    const answering2 = writing.handle(second.inbound);
    await vi.waitFor(() => expect(ends.has("second")).toBe(true), { timeout: 5_000 });
    lookOn();
    // The request is taken (and dropped) before the second answer ends.
    await vi.waitFor(async () => expect(await new StopRequests(store).asked()).toEqual([]), {
      timeout: 5_000,
    });
    ends.get("second")!();
    await answering2;
    expect(second.seen.ended).toBe("");
    expect(second.seen.text).toBe("On second.");
  }, 20_000);
});
