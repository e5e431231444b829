import { AttachmentBuilder, RateLimitError } from "discord.js";
import type { Artifact } from "../../core/artifacts.js";
import { log } from "../../log.js";
import type { Reply, TextSink } from "../../runtime/contract.js";
import { type MessageOps, type RateBudget, RateLimitedError, StreamWriter } from "../../runtime/stream.js";
import { tablesToCodeBlocks } from "../../runtime/tables.js";
import { planUploads, tooLargeSentence } from "./files.js";

/** Discord's content limit for bots (4,000 is a user Nitro perk). */
export const DISCORD_MESSAGE_LIMIT = 2_000;
/** A typing indicator lasts 10 s on Discord; renew it a little before. */
const TYPING_RENEW_MS = 8_000;
const UPLOAD_ATTEMPTS = 3;

export interface OutgoingMessage {
  content?: string;
  files?: AttachmentBuilder[];
}

/** Where one reply is written: a channel or thread, or an interaction's webhook. */
export interface Place {
  ops: MessageOps;
  /** Sends a message that is not part of the streamed answer (files, sentences). */
  send(message: OutgoingMessage): Promise<void>;
  /** An informational answer, ephemeral where possible. */
  notice(text: string): Promise<void>;
  typing?(): Promise<void>;
  /** Renames the thread; absent when the bot should not rename this place. */
  rename?(title: string): Promise<void>;
}

export interface ReplyOptions {
  /** Shared by every reply written into the same channel (Discord limits writes per channel). */
  budget: RateBudget;
  intervalMs: number;
  maxFileBytes: number;
}

interface PendingUpload {
  artifact: Artifact;
  resolve: () => void;
  reject: (err: unknown) => void;
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

/** A discord.js rate-limit rejection as the writer understands it. */
export function asWriteError(err: unknown): unknown {
  if (err instanceof RateLimitError) return new RateLimitedError(err.retryAfter, { cause: err });
  return err;
}

/** Keeps "Switchboard is typing…" visible while the model thinks or tools run. */
class Typing {
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(private readonly send: (() => Promise<void>) | undefined) {}

  start(): void {
    if (this.timer || !this.send) return;
    const send = this.send;
    const fire = () => void send().catch((err: unknown) => log.debug({ err }, "typing not shown"));
    fire();
    this.timer = setInterval(fire, TYPING_RENEW_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}

/** One turn's way back into its Discord thread, DM or interaction. */
export class DiscordReply implements Reply {
  private writer: StreamWriter | undefined;
  private readonly typing: Typing;
  private lastStatus = "";
  private pending: PendingUpload[] = [];
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly place: Place,
    private readonly opts: ReplyOptions,
  ) {
    this.typing = new Typing(place.typing?.bind(place));
  }

  private sink(): StreamWriter {
    this.writer ??= new StreamWriter(this.place.ops, {
      limit: DISCORD_MESSAGE_LIMIT,
      intervalMs: this.opts.intervalMs,
      budget: this.opts.budget,
      render: tablesToCodeBlocks,
      statusLine: true,
    });
    return this.writer;
  }

  async status(text: string): Promise<void> {
    this.typing.start();
    if (text === this.lastStatus) return;
    this.lastStatus = text;
    // Subtext: small grey line under the answer, dropped from the final text by the writer.
    this.sink().status(`-# ${text}`);
  }

  stream(): TextSink {
    const writer = this.sink();
    this.typing.start();
    const end = <T>(p: Promise<T>) => p.finally(() => this.typing.stop());
    return {
      write: (delta) => {
        this.typing.stop();
        writer.write(delta);
      },
      finish: () => end(writer.finish()),
      fail: (message) => end(writer.fail(message)),
    };
  }

  /**
   * Resolves once the file is on Discord (or a sentence says why it could not be), and
   * rejects when sending failed. Files handed over in the same tick (e.g. with
   * `Promise.all`) share messages, up to 10 each.
   */
  upload(a: Artifact): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ artifact: a, resolve, reject });
      if (this.pending.length === 1) {
        this.flushing = this.flushing.then(
          () => new Promise<void>((done) => setTimeout(() => void this.flush().finally(done), 0)),
        );
      }
    });
  }

  async title(t: string): Promise<void> {
    const rename = this.place.rename;
    if (!rename) return;
    // Renames are limited to about 2 per 10 minutes: fire once, never hold the answer for it.
    void rename(t.slice(0, 100)).catch((err: unknown) =>
      log.warn({ err: asWriteError(err) }, "thread not renamed"),
    );
  }

  async notice(text: string): Promise<void> {
    await this.place.notice(text);
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    const { batches, tooLarge } = planUploads(batch, this.opts.maxFileBytes, (p) => p.artifact.bytes.length);
    for (const group of batches) {
      await settle(
        group,
        this.sendWithRetry({
          files: group.map(
            ({ artifact: f }) =>
              new AttachmentBuilder(Buffer.from(f.bytes), { name: f.filename, description: f.title }),
          ),
        }),
      );
    }
    for (const p of tooLarge) {
      await settle(
        [p],
        this.sendWithRetry({ content: tooLargeSentence(p.artifact, this.opts.maxFileBytes) }),
      );
    }
  }

  /** A 429 means Discord did not take the message, so waiting and sending again is safe. */
  private async sendWithRetry(message: OutgoingMessage): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      await this.opts.budget.take();
      try {
        await this.place.send(message);
        return;
      } catch (err) {
        const e = asWriteError(err);
        if (!(e instanceof RateLimitedError) || attempt >= UPLOAD_ATTEMPTS) throw e;
        // The next take() waits until the pause is over.
        this.opts.budget.pause(e.retryAfterMs);
      }
    }
  }
}
