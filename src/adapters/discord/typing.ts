import { log } from "../../log.js";

/** Discord shows "typing…" for about 10 s after each call. */
const TYPING_RENEW_MS = 8_000;

/** Keeps "Switchboard is typing…" visible while the model thinks or tools run. */
export class Typing {
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
