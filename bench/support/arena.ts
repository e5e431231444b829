import type { Watcher } from "./watch.js";

/** A message a person sent: where its answer goes, and when it was sent (ms since epoch). */
export interface Asked {
  thread: string;
  at: number;
}

/** One bot (Switchboard or the naive one) on its own emulated platform. */
export interface Arena {
  bot: "Switchboard" | "naive";
  watch: Watcher;
  /** A place for new conversations no other measurement has used (a fresh channel). */
  place(): Promise<string>;
  /** A person mentions the bot in `place`, opening a new conversation. */
  mention(place: string, text: string): Asked;
  /** A person writes again in a conversation the bot answered (no mention needed). */
  followUp(thread: string, text: string): Asked;
  /**
   * Resolves when the bot is done with the thread's last message: its turn is over and the
   * thread is known (a follow-up is answered, not ignored or queued). Absent: at once.
   */
  settled?(thread: string): Promise<number>;
  /** Starts the platform's rate windows afresh, as after a quiet minute (before a crowd). */
  quiet?(): void;
  stop(): Promise<void>;
}
