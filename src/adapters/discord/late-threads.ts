import type { Client, ThreadChannel } from "discord.js";
import { log } from "../../log.js";
import { NO_PINGS } from "./places.js";

/**
 * How long a thread given up on is watched for. Discord has no deadline of its own for a
 * request it took; past this, a thread it opens is rare enough to be left to moderators.
 */
const WATCH_MS = 10 * 60_000;

/** What a thread that opened too late says, where the bot may not delete it. */
export function lateThreadNote(parentId: string): string {
  return `Discord opened this thread only after I had answered in <#${parentId}>: the answer is there.`;
}

/**
 * Threads whose opening the bot gave up on after its request went out (see `openThread`):
 * Discord may have taken the request and open the thread later, beside an answer that went
 * to the channel. The request's own answer is never seen (the fetch was aborted, and with
 * it the response), so the thread is known by the gateway's THREAD_CREATE: a thread of the
 * bot's with the message's id. Deleted where the bot has Manage Threads (even a thread's
 * creator needs it, and Switchboard's invite does not ask for it); otherwise it says where
 * the answer is, and is archived, which its creator may do.
 */
export class LateThreads {
  private readonly watched = new Map<string, NodeJS.Timeout>();

  constructor(private readonly client: Client) {}

  /** The thread of message `id` was given up on: told of it, `appeared` tidies it away. */
  watch(id: string): void {
    clearTimeout(this.watched.get(id));
    const expiry = setTimeout(() => this.watched.delete(id), WATCH_MS);
    expiry.unref();
    this.watched.set(id, expiry);
  }

  /** A thread the gateway says was created. */
  async appeared(thread: ThreadChannel): Promise<void> {
    const expiry = this.watched.get(thread.id);
    if (!expiry || thread.ownerId !== this.client.user?.id) return;
    clearTimeout(expiry);
    this.watched.delete(thread.id);
    if (thread.manageable) {
      try {
        await thread.delete("Opened late: the answer went to the channel");
        log.info({ thread: thread.id }, "a thread Discord opened late was deleted");
        return;
      } catch (err) {
        log.info(
          { err, thread: thread.id },
          "a thread Discord opened late could not be deleted; archiving it",
        );
      }
    }
    await thread
      .send({ content: lateThreadNote(thread.parentId ?? ""), allowedMentions: NO_PINGS })
      .catch((err: unknown) => log.info({ err, thread: thread.id }, "no note in a thread opened late"));
    await thread
      .setArchived(true, "Opened late: the answer went to the channel")
      .catch((err: unknown) =>
        log.warn({ err, thread: thread.id }, "a thread Discord opened late stays open"),
      );
  }
}
