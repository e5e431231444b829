import { once } from "node:events";
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { log } from "../log.js";

/** How long after a file store opens its checkpoint worker starts (until then its connection checkpoints). */
export const CHECKPOINTS_START_AFTER_MS = 2_000;

/** How often the worker copies the WAL's pages back into the database file. */
export const CHECKPOINT_EVERY_MS = 1_000;

/*
 * The worker: a connection of its own to the same file, checkpointing without blocking
 * readers or writers (PASSIVE). It writes nothing else. Plain CommonJS, run from a
 * string, so it needs no file of its own next to the compiled or the tsx-run code.
 */
const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.file, { timeout: workerData.busyTimeoutMs });
const timer = setInterval(() => {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch (err) {
    parentPort.postMessage({ failed: String((err && err.message) || err) });
  }
}, workerData.everyMs);
parentPort.on("message", (m) => {
  if (m !== "stop") return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/**
 * SQLite's checkpoints of a WAL file, moved off the main thread: a checkpoint copies
 * every page written since the last one and syncs the file (13 ms at most on this
 * project's test machine, each 4 MB written; more on a slow disk), and on the connection
 * that answers the bot's queries it would run in the middle of one of them. `onFailure`
 * hands checkpoints back to that connection when the worker stops unasked.
 */
export class Checkpoints {
  private readonly worker: Worker;
  private stopping = false;
  /** Set once the worker has ended: its exit event is never emitted again, nor by terminate(). */
  private exited = false;

  constructor(file: string, busyTimeoutMs: number, onFailure: () => void, everyMs = CHECKPOINT_EVERY_MS) {
    const driver = createRequire(import.meta.url).resolve("better-sqlite3");
    this.worker = new Worker(WORKER, { eval: true, workerData: { driver, file, busyTimeoutMs, everyMs } });
    // A process with nothing else to do ends; the store's close stops the worker first.
    this.worker.unref();
    let warned = false;
    this.worker.on("message", (m: { failed?: string }) => {
      if (m.failed && !warned) {
        warned = true;
        log.warn({ reason: m.failed }, "sqlite: a checkpoint of the WAL failed; the next one tries again");
      }
    });
    this.worker.on("error", (err) => log.warn({ err }, "sqlite: the checkpoint worker failed"));
    this.worker.on("exit", () => {
      this.exited = true;
      if (this.stopping) return;
      log.warn("sqlite: the checkpoint worker stopped; the store checkpoints on its own connection again");
      onFailure();
    });
  }

  async stop(): Promise<void> {
    if (this.stopping || this.exited) return;
    this.stopping = true;
    const exited = once(this.worker, "exit");
    this.worker.postMessage("stop");
    // `void` would leave a failed terminate unhandled: it is the exit awaited below that counts.
    const late = setTimeout(() => this.worker.terminate().catch(() => undefined), 2_000);
    try {
      await exited;
    } finally {
      clearTimeout(late);
    }
  }
}
