import { AttachmentBuilder, DiscordAPIError } from "discord.js";
import type { Artifact } from "../../core/artifacts.js";
import { log } from "../../log.js";
import type { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { RateLimitedError } from "../../runtime/stream.js";
import { planUploads, tooLargeSentence } from "./files.js";

const UPLOAD_ATTEMPTS = 3;

export interface PendingUpload {
  artifact: Artifact;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** How the files of one reply reach Discord. */
export interface FileWrites {
  /** A message of its own (more files, or a sentence about a file too large). */
  send(message: { content?: string; files?: AttachmentBuilder[] }): Promise<void>;
  /** Adds files to a message of the answer, keeping its text. */
  attach(id: string, text: string, files: AttachmentBuilder[]): Promise<void>;
  /** The answer's last message as written, if there is one. */
  answer(): { id: string; text: string } | undefined;
  /** The bot's write scheduler, and the buckets of the reply's channel. */
  scheduler: WriteScheduler;
  buckets(): readonly string[];
  maxFileBytes: number;
  asWriteError(err: unknown): unknown;
}

function builders(uploads: readonly PendingUpload[]): AttachmentBuilder[] {
  return uploads.map(
    ({ artifact: f }) =>
      new AttachmentBuilder(Buffer.from(f.bytes), { name: f.filename, description: f.title }),
  );
}

/** Discord refused the request itself (4xx other than 429): nothing was created or changed. */
function refused(err: unknown): boolean {
  return err instanceof DiscordAPIError && err.status >= 400 && err.status < 500 && err.status !== 429;
}

/**
 * The files of one reply. While the answer is being written they are held, and the first
 * ten (within the size limits) go with the answer's final write, so the image a tool made
 * arrives with the text instead of a rate-limit wait later. What is left, and files that
 * come after the answer, are added to the answer's last message if it carries none yet,
 * then sent as messages of up to ten files; a file over the limit gets a sentence.
 */
export class ReplyFiles {
  /** True while the answer is being written: files wait for its final write. */
  holding = false;
  private held: PendingUpload[] = [];
  private queued: PendingUpload[] = [];
  private flushing: Promise<void> = Promise.resolve();
  /** The answer's last message carries files (a message keeps one set: later ones are messages). */
  private attached = false;
  /** Discord refused the final write with files once: do not make the answer wait on them again. */
  private attachRefused = false;

  constructor(private readonly w: FileWrites) {}

  /** Resolves once the file is on Discord (or a sentence says why not); rejects when sending failed. */
  add(artifact: Artifact): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const upload = { artifact, resolve, reject };
      if (this.holding) this.held.push(upload);
      else this.queue([upload]);
    });
  }

  /**
   * The answer's final write, with the first batch of held files if any: they resolve when
   * it lands. A refused write is repeated without them (they are sent on their own later).
   */
  async withFinal<T>(
    final: boolean | undefined,
    write: (files?: AttachmentBuilder[]) => Promise<T>,
  ): Promise<T> {
    const batch = final && !this.attached && !this.attachRefused ? this.takeBatch() : [];
    if (batch.length === 0) return write();
    try {
      const result = await write(builders(batch));
      this.attached = true;
      for (const u of batch) u.resolve();
      return result;
    } catch (err) {
      this.held.unshift(...batch);
      if (this.w.asWriteError(err) instanceof RateLimitedError) throw err;
      this.attachRefused = true;
      log.warn({ err }, "answer not sent with its files; sending them on their own");
      if (refused(err)) return write();
      throw err;
    }
  }

  /** The answer is complete (or failed): files still held go out now. */
  release(): void {
    this.holding = false;
    const held = this.held;
    this.held = [];
    if (held.length > 0) this.queue(held);
  }

  private takeBatch(): PendingUpload[] {
    const { batches } = planUploads(this.held, this.w.maxFileBytes, (p) => p.artifact.bytes.length);
    const batch = batches[0] ?? [];
    this.held = this.held.filter((u) => !batch.includes(u));
    return batch;
  }

  /** Files handed over in the same tick (e.g. with `Promise.all`) share messages. */
  private queue(uploads: PendingUpload[]): void {
    this.queued.push(...uploads);
    if (this.queued.length !== uploads.length) return;
    this.flushing = this.flushing.then(
      () => new Promise<void>((done) => setTimeout(() => void this.flush().finally(done), 0)),
    );
  }

  private async flush(): Promise<void> {
    const batch = this.queued;
    this.queued = [];
    const { batches, tooLarge } = planUploads(batch, this.w.maxFileBytes, (p) => p.artifact.bytes.length);
    for (const group of batches) {
      const answer = this.attached ? undefined : this.w.answer();
      if (answer) this.attached = true;
      const files = builders(group);
      await settle(
        group,
        this.withRetry(() =>
          answer ? this.w.attach(answer.id, answer.text, files) : this.w.send({ files }),
        ),
      );
    }
    for (const p of tooLarge) {
      const content = tooLargeSentence(p.artifact, this.w.maxFileBytes);
      await settle(
        [p],
        this.withRetry(() => this.w.send({ content })),
      );
    }
  }

  /** A 429 means Discord did not take the message, so waiting and sending again is safe. */
  private async withRetry(write: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        // Files come with the answer: the final lane. The scheduler pauses a bucket after its 429.
        await this.w.scheduler.run({
          lane: "final",
          buckets: () => this.w.buckets(),
          requeue: false,
          what: "files",
          run: async () => {
            try {
              await write();
            } catch (err) {
              throw this.w.asWriteError(err);
            }
          },
        });
        return;
      } catch (err) {
        if (!(err instanceof RateLimitedError) || attempt >= UPLOAD_ATTEMPTS) throw err;
      }
    }
  }
}

/** Tells every upload of a message how sending it went. */
async function settle(uploads: PendingUpload[], sent: Promise<void>): Promise<void> {
  try {
    await sent;
    for (const u of uploads) u.resolve();
  } catch (err) {
    for (const u of uploads) u.reject(err);
  }
}
