/**
 * Where a reply's messages are on the platform: plain JSON, stored with the turn, enough
 * for any process to find them again (crash recovery, a click an hour later, a replica).
 */
export interface ReplyAddress {
  /** Platform message ids in order (Slack ts, Discord message ids); the last one is being written. */
  messages: string[];
  /** The channel they are in, when the thread key does not say it (a Discord interaction's channel). */
  channel?: string;
  /** A Slack native stream (`chat.startStream`) was still open at the last write. */
  streaming?: boolean;
  /**
   * A message that takes no idempotency key (a Slack native stream's start) was being
   * posted since this time (ms since the epoch, by the posting process's clock), its id
   * not known yet: a process taking the turn over looks for it among the bot's messages.
   */
  starting?: number;
}

/**
 * A stored reply to write on. `retake`: the turn is taken over after its process died,
 * and its messages are laid out again from this text (the answer up to its last
 * checkpoint), replacing what the cut-off step showed.
 */
export interface ResumeFrom extends ReplyAddress {
  retake?: string;
  /** Who asked (their platform id), when known: notices go to them alone where the platform can. */
  asker?: string;
}
