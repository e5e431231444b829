/**
 * A model's pace: the n-th paced chunk of a stream is due `n × everyMs` after the first
 * was asked for, as a model's server sends its tokens when the model makes them. A sleep
 * of `everyMs` after each write instead added every timer's lateness and every write's
 * wait to the stream: beside the load bench's 200-thread crowds, on a machine the bot
 * shares with the emulators, a 3.8 s answer took 4.6 s, and the bot's figures carried the
 * emulator's own slowness. A chunk that is late is due at once, with those due since.
 */
export class Pace {
  private from: number | undefined;
  private count = 0;

  constructor(
    private readonly everyMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** ms to wait before the next chunk (0: it is due now). */
  next(): number {
    const now = this.now();
    this.from ??= now;
    this.count += 1;
    return Math.max(0, this.from + this.count * this.everyMs - now);
  }
}
