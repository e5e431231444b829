import type { Artifact } from "../core/artifacts.js";
import type { AgentEvent } from "../core/events.js";
import { log } from "../log.js";
import type { Reply, TextSink } from "./contract.js";

/** How a turn's reply ended, as the renderer saw it. */
export type RenderOutcome = "ok" | "error" | "interrupted";

/**
 * Agent events into one Reply: the only place that decides what a user sees of a turn.
 * Text is handed to the sink as it comes (the sink paces the platform writes). Files are
 * handed to the reply as they come, each once, so a platform can put them on the answer's
 * final write; the turn waits for them only once the answer has ended, also when the turn
 * failed, because the model may already have told the user about them.
 */
export class ReplyRenderer {
  private readonly sink: TextSink;
  private readonly uploads: Promise<void>[] = [];
  /** Files held until the answer has ended, for platforms that cannot put them on its last write. */
  private readonly held: Artifact[] = [];
  private readonly seen = new Set<string>();
  private visible = false;
  private ended = false;
  /** The answer's end failed to be written: `fail` may still end it with a sentence. */
  private endFailed = false;
  private abandoning: Promise<void> | undefined;

  constructor(
    private readonly reply: Reply,
    private readonly onVisible: () => void,
    /** The sentence for an error while the process is shutting down. */
    private readonly interruptedNote: () => string | undefined,
  ) {
    this.sink = reply.stream();
  }

  /** Renders one event; resolves when what the event requires is on the platform. */
  async render(event: AgentEvent): Promise<RenderOutcome | undefined> {
    switch (event.type) {
      case "status":
        this.markVisible();
        void this.reply.status(event.text).catch((err: unknown) => log.debug({ err }, "status not shown"));
        return undefined;
      case "text": {
        this.markVisible();
        this.sink.write(event.delta);
        const broken = this.sink.broken?.();
        if (broken !== undefined) throw broken;
        return undefined;
      }
      case "artifact":
        if (this.reply.filesWithAnswer) this.upload(event.artifact);
        else this.held.push(event.artifact);
        return undefined;
      case "tool":
        return undefined;
      case "done":
        await this.finish(() => this.sink.finish({ answered: true }));
        return "ok";
      case "waiting":
        // Waiting for approvals: the text so far is final, and the questions go below it.
        await this.finish(() => this.sink.finish());
        return "ok";
      case "error": {
        const note = this.interruptedNote();
        await this.finish(() => this.sink.fail(note ?? event.error.message));
        return note ? "interrupted" : "error";
      }
    }
  }

  /** The error that stopped the reply's writes for good, if one did (see `TextSink.broken`). */
  broken(): unknown {
    return this.sink.broken?.();
  }

  /** Ends a reply the agent could not end itself (an exception outside its events). */
  async fail(message: string): Promise<void> {
    if (this.ended && !this.endFailed) return;
    this.endFailed = false;
    await this.finish(() => this.sink.fail(message)).catch(() => undefined);
  }

  /**
   * The answer goes on in another process: what this one has is written as it stands and
   * every write (and the record of where it is) lands before the thread's lock is let go,
   * so nothing of this process reaches the platform or the record after the taker starts.
   * Files not uploaded yet are left to the taker, which runs their step again.
   */
  async handOver(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    await this.sink.finish().catch(() => undefined);
    await Promise.allSettled(this.uploads);
  }

  /**
   * The thread's lock was lost: nothing more of this turn is written, not even what it has,
   * also when its end (a finish, a hand-over) is still waiting to be written.
   */
  abandon(): Promise<void> {
    this.ended = true;
    this.endFailed = false;
    this.abandoning ??= (this.sink.abandon?.() ?? Promise.resolve()).catch(() => undefined);
    return this.abandoning;
  }

  private async finish(end: () => Promise<void>): Promise<void> {
    this.ended = true;
    try {
      await end();
    } catch (err) {
      // After an outage the sink tries once more when failed (see StreamWriter.fail).
      this.endFailed = true;
      throw err;
    }
    for (const a of this.held.splice(0)) this.upload(a);
    await Promise.all(this.uploads);
  }

  private markVisible(): void {
    if (this.visible) return;
    this.visible = true;
    this.onVisible();
  }

  /** Never awaited before the answer ends: a platform may hold a file for the answer's final write. */
  private upload(a: Artifact): void {
    const id = `${a.filename}:${a.bytes.length}:${Buffer.from(a.bytes.subarray(0, 64)).toString("base64")}`;
    if (this.seen.has(id)) return;
    this.seen.add(id);
    this.uploads.push(
      this.reply
        .upload(a)
        .catch((err: unknown) => log.warn({ err, file: a.filename }, "artifact not uploaded")),
    );
  }
}
