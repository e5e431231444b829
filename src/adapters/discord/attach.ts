import { AttachmentBuilder, DiscordAPIError, HTTPError, RESTJSONErrorCodes } from "discord.js";
import type { Artifact } from "../../core/artifacts.js";
import { log } from "../../log.js";
import type { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { RateLimitedError } from "../../runtime/stream.js";
import { noAttachSentence, notUploadedSentence, planUploads, tooLargeSentence } from "./files.js";

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
  /** The largest file this place takes, as far as the adapter knows (see `uploadLimit`). */
  maxFileBytes(): number;
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
 * Why files did not reach Discord, as the thread is to be told: too large for the place
 * (40005, or a bare 413 from in front of the API), the Attach Files permission missing
 * (50013), no answer within @discordjs/rest's 15 s (it aborts the request), or else.
 */
function uploadFailure(err: unknown): "too large" | "no permission" | "timed out" | "failed" {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof DiscordAPIError) {
      if (e.code === RESTJSONErrorCodes.RequestEntityTooLarge || e.status === 413) return "too large";
      return e.code === RESTJSONErrorCodes.MissingPermissions ? "no permission" : "failed";
    }
    if (e instanceof HTTPError) return e.status === 413 ? "too large" : "failed";
    if (e instanceof Error && (e.name === "AbortError" || e.name === "TimeoutError")) return "timed out";
  }
  return "failed";
}

const artifacts = (uploads: readonly PendingUpload[]) => uploads.map((u) => u.artifact);

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
  /** Discord refused files for want of Attach Files: the rest get the sentence without a try. */
  private noAttach = false;
  /** The smallest file Discord refused as too large here: files as large are not tried again. */
  private refusedBytes = Number.POSITIVE_INFINITY;

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
      const why = uploadFailure(err);
      if (why === "no permission") this.noAttach = true;
      if (why === "too large" && batch.length === 1)
        this.refusedBytes = Math.min(
          this.refusedBytes,
          batch[0]?.artifact.bytes.length ?? Number.POSITIVE_INFINITY,
        );
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

  /** The most a file may weigh here: the place's limit, and below what Discord refused as too large. */
  private limit(): number {
    return Math.min(this.w.maxFileBytes(), this.refusedBytes - 1);
  }

  private takeBatch(): PendingUpload[] {
    const { batches } = planUploads(this.held, this.limit(), (p) => p.artifact.bytes.length);
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
    const { batches, tooLarge } = planUploads(batch, this.limit(), (p) => p.artifact.bytes.length);
    for (const group of batches) await this.sendFiles(group);
    const known = this.w.maxFileBytes();
    for (const p of tooLarge) {
      // Under the known limit, it is only over what Discord refused: no number to give.
      const over = p.artifact.bytes.length > known ? known : undefined;
      await this.tell([p], tooLargeSentence(p.artifact, over));
    }
  }

  /** One message of files: added to the answer's last message if it has none yet, else a message of their own. */
  private async sendFiles(group: PendingUpload[]): Promise<void> {
    if (this.noAttach) return this.tell(group, noAttachSentence(artifacts(group)));
    const answer = this.attached ? undefined : this.w.answer();
    if (answer) this.attached = true;
    const files = builders(group);
    try {
      await this.withRetry(() =>
        answer ? this.w.attach(answer.id, answer.text, files) : this.w.send({ files }),
      );
    } catch (err) {
      if (answer) this.attached = false;
      return this.failed(group, err);
    }
    for (const u of group) u.resolve();
  }

  /**
   * Files Discord did not take: the thread is told why (DESIGN.md: over the platform's
   * limit, say so, never fail the turn), else the text would say "attached" over nothing.
   * Several refused as too large are tried one by one: the message may have been too large
   * for one request, or one of them for the place.
   */
  private async failed(group: PendingUpload[], err: unknown): Promise<void> {
    const why = uploadFailure(err);
    log.warn({ err, files: group.map((u) => u.artifact.filename), why }, "files not uploaded");
    if (why === "too large" && group.length > 1) {
      for (const u of group) {
        if (u.artifact.bytes.length > this.limit()) await this.tell([u], tooLargeSentence(u.artifact));
        else await this.sendFiles([u]);
      }
      return;
    }
    if (why === "too large") {
      for (const u of group) {
        this.refusedBytes = Math.min(this.refusedBytes, u.artifact.bytes.length);
        await this.tell([u], tooLargeSentence(u.artifact));
      }
      return;
    }
    if (why === "no permission") {
      this.noAttach = true;
      return this.tell(group, noAttachSentence(artifacts(group)));
    }
    return this.tell(group, notUploadedSentence(artifacts(group), why === "timed out"), err);
  }

  /** A sentence in place of files: they are settled once it is there; `cause` is what they fail with if it cannot be. */
  private async tell(group: PendingUpload[], content: string, cause?: unknown): Promise<void> {
    try {
      await this.withRetry(() => this.w.send({ content }));
    } catch (err) {
      for (const u of group) u.reject(cause ?? err);
      return;
    }
    for (const u of group) u.resolve();
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
