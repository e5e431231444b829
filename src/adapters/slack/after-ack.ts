import { log } from "../../log.js";

/**
 * What a form submission says to the person while its ack is still owed. The forms desk
 * answers many submissions only with a sentence (the form is over, part 1 of 2 is saved,
 * someone answered first) and awaits it; that is tellPrivately, up to three round trips
 * through the write scheduler (postEphemeral, then conversations.open and postMessage when
 * Slack refuses it), which a spent budget or a slow Slack stretches past the 3 s Slack
 * waits for the ack. So each sentence is taken at once and sent, in order, once the ack is.
 */
export class AfterAck {
  private held: string[] | undefined = [];
  private sending: Promise<void> = Promise.resolve();

  constructor(private readonly send: (text: string) => Promise<void>) {}

  /** Resolves at once while the ack is owed (awaiting the send then would hold the ack back). */
  say(text: string): Promise<void> {
    if (this.held) {
      this.held.push(text);
      return Promise.resolve();
    }
    return this.queue(text);
  }

  /** The ack is sent (or could not be): what was said goes now. */
  acked(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const text of held) void this.queue(text);
  }

  private queue(text: string): Promise<void> {
    this.sending = this.sending
      .then(() => this.send(text))
      .catch((err: unknown) => log.warn({ err }, "a form submission's answer to the person was not sent"));
    return this.sending;
  }
}

/** `work`'s result if it settles within `ms`, else undefined (it runs on). */
export async function within<T>(work: Promise<T>, ms: number): Promise<{ value: T } | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([work.then((value) => ({ value })), late]);
  } finally {
    clearTimeout(timer);
  }
}
