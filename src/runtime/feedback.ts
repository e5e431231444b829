import { randomUUID } from "node:crypto";
import { log } from "../log.js";
import type { FeedbackBook, Vote } from "../store/feedback.js";
import type { Payer } from "../store/usage.js";
import type { Interaction, Reply } from "./contract.js";

export const THANKS = "Thanks: your rating is recorded.";
export const CHANGED = "Changed your rating.";
export const SAME = "You rated this answer that way already.";
export const GONE = "This answer can no longer be rated.";

/** Told of each vote (Prometheus); `first` is false for a changed vote. */
export type VoteListener = (platform: string, vote: Vote, first: boolean) => void;

/**
 * 👍 / 👎 under finished answers: each answer gets a stored ref (with its trace id), the
 * platform puts the buttons under it, and a click records the person's vote (one per
 * person per answer; a second click with the other button changes it).
 */
export class FeedbackDesk {
  constructor(
    private readonly book: FeedbackBook,
    private readonly listener?: VoteListener,
  ) {}

  /**
   * As a turn starts: the reply puts the buttons under the answer if it finishes. The answer
   * is stored as ratable (with the turn's trace id, when traced) in the background: it is
   * written long before anyone can click.
   */
  offer(payer: Payer, reply: Reply, traceId?: string): void {
    if (!reply.offerFeedback || payer.platform === "console") return;
    const ref = `f${randomUUID().replace(/-/g, "").slice(0, 20)}`;
    reply.offerFeedback(ref);
    void this.book
      .open(ref, {
        key: payer.key,
        platform: payer.platform,
        channel: payer.channel,
        at: Date.now(),
        ...(traceId ? { traceId } : {}),
      })
      .catch((err: unknown) => log.warn({ err, key: payer.key }, "an answer's rating could not be stored"));
  }

  /** Handles the click when `ref` is a rated answer's; false when it is not one. */
  async interact(interaction: Interaction): Promise<boolean> {
    const value = interaction.value;
    if (value !== "good" && value !== "bad") return false;
    const answer = await this.book.find(interaction.ref);
    if (!answer) {
      await interaction.respond(GONE).catch(() => undefined);
      return true;
    }
    const outcome = await this.book.vote(interaction.ref, interaction.user.id, value);
    log.info(
      { key: answer.key, vote: value, outcome, ...(answer.traceId ? { traceId: answer.traceId } : {}) },
      "answer rated",
    );
    if (outcome !== "same") this.listener?.(answer.platform, value, outcome === "new");
    await interaction
      .respond(outcome === "new" ? THANKS : outcome === "changed" ? CHANGED : SAME)
      .catch(() => undefined);
    return true;
  }
}
