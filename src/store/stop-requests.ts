import type { ThreadKey } from "../core/thread.js";
import type { Store } from "./index.js";
import { createState, type StateStore } from "./state.js";

/** A Stop asked of the replica writing a thread's answer: by whom, for which turn, and which of its Stop buttons, if one. */
export interface StopRequest {
  by: string;
  /**
   * The id of the turn's record (`TurnRecord.id`): only that turn stops. A request its
   * replica takes after the turn ended (a poll a second apart) stops nothing, not the
   * thread's next answer. Absent from a request left by an older version.
   */
  run?: string;
  /** The Stop button's ref: only the answer it was under stops. Absent: the stop command, or Slack's own stop button. */
  ref?: string;
}

/** A request not taken within this long is for an answer that has ended meanwhile. */
const REQUEST_TTL_MS = 30_000;
/** A Stop button is clicked while its answer is written: minutes, not hours. */
const BUTTON_TTL_MS = 60 * 60_000;

const requestKey = (key: ThreadKey) => `stop:${key}`;
/** The threads with a request: each replica reads this one list, not a key per answer it writes. */
const ASKED = "stops-asked";
const buttonKey = (ref: string) => `stop-button:${ref}`;

/**
 * Stops that reach another replica than the one writing the answer (Slack and Discord hand
 * a click or a command to any of them): the thread of each Stop button, and the requests
 * the writing replica takes within a second or two. Used only while replicas share the store.
 */
export class StopRequests {
  private readonly state: StateStore;

  constructor(store: Store) {
    this.state = createState(store);
  }

  /** Notes the thread whose answer the Stop button `ref` is under, for a click that reaches another replica. */
  async button(ref: string, key: ThreadKey): Promise<void> {
    await this.state.set(buttonKey(ref), key, BUTTON_TTL_MS);
  }

  /** The thread of a Stop button another replica noted. */
  threadOf(ref: string): Promise<ThreadKey | undefined> {
    return this.state.get<ThreadKey>(buttonKey(ref));
  }

  async ask(key: ThreadKey, request: StopRequest): Promise<void> {
    await this.state.set(requestKey(key), request, REQUEST_TTL_MS);
    await this.state.listAddEach([ASKED], key, REQUEST_TTL_MS);
  }

  /** The threads that may have a request (a few too many: `take` finds none there). */
  asked(): Promise<ThreadKey[]> {
    return this.state.listMembers(ASKED);
  }

  /** The request for the thread's answer, taken (so that it stops once), if there is one. */
  async take(key: ThreadKey): Promise<StopRequest | undefined> {
    const request = await this.state.get<StopRequest>(requestKey(key));
    if (request) await this.state.delete(requestKey(key));
    await this.state.listRemove(ASKED, key);
    return request;
  }
}
