import type { Platform, ThreadKey } from "../core/thread.js";
import type { Store } from "./index.js";
import { createState, type StateStore } from "./state.js";
import { DAY_LISTS_KEPT_MS, dayOf } from "./usage.js";

export type Vote = "good" | "bad";

/** A finished answer that people may rate: where it is, and its trace when there was one. */
export interface RatedAnswer {
  key: ThreadKey;
  platform: Platform;
  channel: string;
  at: number;
  traceId?: string;
}

/** How long an answer can be rated after it was given. */
const KEEP_MS = 30 * 86_400_000;

/**
 * Votes on answers: one per person per answer (a second click changes it), first-wins
 * across replicas for the first vote, so a vote is counted once however many replicas
 * see clicks. Each day's votes are listed for the admins' report.
 */
export class FeedbackBook {
  private readonly state: StateStore;

  constructor(store: Store) {
    this.state = createState(store);
  }

  async open(ref: string, answer: RatedAnswer): Promise<void> {
    await this.state.set(`feedback:${ref}`, answer, KEEP_MS);
  }

  async find(ref: string): Promise<RatedAnswer | undefined> {
    return this.state.get<RatedAnswer>(`feedback:${ref}`);
  }

  /** "new" for a person's first vote on the answer, "changed" or "same" after that. */
  async vote(ref: string, user: string, vote: Vote, at = Date.now()): Promise<"new" | "changed" | "same"> {
    const key = `feedback:vote:${ref}:${user}`;
    if (await this.state.setIfAbsent(key, vote, KEEP_MS)) {
      // A day's votes are reported as usage's day lists are, and go with them.
      await this.state.listAddEach([`feedback:day:${dayOf(at)}`], `${ref}|${user}`, DAY_LISTS_KEPT_MS);
      return "new";
    }
    if ((await this.state.get<Vote>(key)) === vote) return "same";
    await this.state.set(key, vote, KEEP_MS);
    return "changed";
  }

  /** The day's votes as they stand now (a changed vote counts as its latest). */
  async tally(day = dayOf(Date.now())): Promise<{ good: number; bad: number; answers: number }> {
    const members = await this.state.listMembers(`feedback:day:${day}`);
    const votes = await Promise.all(
      members.map(async (m) => {
        const [ref, user] = m.split("|");
        return { ref, vote: await this.state.get<Vote>(`feedback:vote:${ref}:${user}`) };
      }),
    );
    return {
      good: votes.filter((v) => v.vote === "good").length,
      bad: votes.filter((v) => v.vote === "bad").length,
      answers: new Set(votes.map((v) => v.ref)).size,
    };
  }
}
