import type { ThreadKey } from "../core/thread.js";
import { countTokens } from "./context.js";

/** Threads remembered at most: the oldest noted is forgotten first. */
const MAX_THREADS = 10_000;

interface Noted {
  system: string;
  pinned?: string;
  toolsTokens: number;
  tokens?: number;
}

/**
 * What each thread's last prompt carried besides its history (instructions, pinned
 * context, tool specs): the compression check counts the history's room without it.
 * Noted as text at every turn and encoded only when a check needs it, since most checks
 * are settled without encoding anything. A thread this process has not run counts none.
 */
export class PromptOverheads {
  private readonly noted = new Map<ThreadKey, Noted>();

  note(key: ThreadKey, prompt: Omit<Noted, "tokens">): void {
    this.noted.delete(key);
    this.noted.set(key, { ...prompt });
    if (this.noted.size > MAX_THREADS) {
      const oldest = this.noted.keys().next().value;
      if (oldest !== undefined) this.noted.delete(oldest);
    }
  }

  tokens(key: ThreadKey): number {
    const n = this.noted.get(key);
    if (!n) return 0;
    n.tokens ??= countTokens(n.system) + countTokens(n.pinned ?? "") + n.toolsTokens;
    return n.tokens;
  }
}
