import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FunctionHub, ScriptedProvider } from "../../test/support/scripted.js";
import { Agent } from "../agent/agent.js";
import { configSchema } from "../config.js";
import { log } from "../log.js";
import { ApprovalBook } from "../store/approvals.js";
import { MemoryDedupe } from "../store/dedupe.js";
import { openStore, type Store } from "../store/index.js";
import { LocalThreadLock } from "../store/locks.js";
import { SessionRepository } from "../store/sessions.js";
import { TurnLedger } from "../store/turns.js";
import type { Adapter } from "./contract.js";
import { Dispatcher } from "./dispatcher.js";
import { PENDING_WATCH_MS, RECOVER_ATTEMPTS } from "./takeover.js";
import { MAX_TAKEOVERS } from "./turn.js";

const KEY = "discord:G1:C1:T1";

describe("a reply cut off by a crash whose restart note cannot be written", () => {
  let dir: string;
  let store: Store;
  let ledger: TurnLedger;
  let dispatcher: Dispatcher | undefined;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "sb-recover-"));
    store = await openStore(`sqlite://${join(dir, "s.sqlite")}`);
    ledger = new TurnLedger(store);
  });

  afterEach(async () => {
    await dispatcher?.drain(0);
    dispatcher = undefined;
    vi.useRealTimers();
    vi.restoreAllMocks();
    await store.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  function start(): Dispatcher {
    const sessions = new SessionRepository(store);
    const hub = new FunctionHub({});
    const config = configSchema.parse({});
    const agent = new Agent({ config, hub, providerFor: () => new ScriptedProvider([]), sessions });
    dispatcher = new Dispatcher({
      agent,
      sessions,
      ledger,
      lock: new LocalThreadLock(),
      dedupe: new MemoryDedupe(),
      approvals: new ApprovalBook(store),
      hub,
      config,
    });
    return dispatcher;
  }

  it(`is given up after ${RECOVER_ATTEMPTS} failed tries, its record ended with one warning, not tried every round for ever`, async () => {
    // The watcher's rounds come when the test says.
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    // Past its takeovers: what is left is to end it with the note.
    const record = await ledger.begin(KEY, {
      id: "turn-1",
      owner: "a-process-that-died",
      input: { text: "a question", user: { id: "U1" }, channel: "C1" },
    });
    record.takeovers = MAX_TAKEOVERS;
    await ledger.checkpoint(record, "The answer starts");
    let tries = 0;
    const discord: Adapter = {
      platform: "discord",
      start: async () => undefined,
      stop: async () => undefined,
      ready: () => true,
      recover: async () => {
        tries++;
        throw new Error("Discord answered 503 Service Unavailable");
      },
    };
    const warn = vi.spyOn(log, "warn");
    // Each failed try is logged as an error, as any stored turn that could not go on.
    vi.spyOn(log, "error").mockReturnValue(undefined);

    await start().recoverInterrupted([discord]);
    expect(tries).toBe(1);
    await vi.waitFor(
      async () => {
        await vi.advanceTimersByTimeAsync(PENDING_WATCH_MS);
        expect(await ledger.pending()).toEqual([]);
      },
      { timeout: 10_000 },
    );

    expect(tries).toBe(RECOVER_ATTEMPTS);
    const gaveUp = warn.mock.calls.filter(([, msg]) => String(msg).startsWith("gave up"));
    expect(gaveUp).toHaveLength(1);
    expect(gaveUp[0]?.[0]).toMatchObject({ key: KEY, attempts: RECOVER_ATTEMPTS });
    await vi.advanceTimersByTimeAsync(3 * PENDING_WATCH_MS);
    expect(tries).toBe(RECOVER_ATTEMPTS);
  });
});
