import { EDIT_ATTEMPTS, nap, RETRY_BUDGET_MS, RETRY_FIRST_MS, RETRY_LONGEST_MS } from "./stream-options.js";

/**
 * What a failed reply write (other than a 429, or an edit of a deleted message) says:
 * - "refused": the platform takes no writes there until someone acts (access or permission
 *   lost, the conversation gone or archived, the token refused). Trying again only delays
 *   telling the asker (see `Reply.unwritable`).
 * - "answered": the platform refused this write for another reason (a 4xx): tried a few
 *   times, since the text changes as the answer grows.
 * - "transient": an outage (a 5xx, Slack's internal_error, a network error, a timeout), or
 *   an error that says nothing: tried again with back-off for `RETRY_BUDGET_MS`.
 */
export type WriteFault = "refused" | "answered" | "transient";

/**
 * Read from the errors' shapes, not their classes: the runtime knows no platform SDK. Slack's
 * WebClient puts its `error` in `data.error` (chat.postMessage's and chat.update's docs list
 * these); discord.js's DiscordAPIError has a numeric `code` and the HTTP `status`.
 */
/** Slack's refusals of the conversation itself: what the asker is told of (`slack/unwritable.ts`). */
export const SLACK_PLACE_REFUSALS: ReadonlySet<string> = new Set([
  "is_archived",
  "not_in_channel",
  "channel_not_found",
  "restricted_action",
  "restricted_action_read_only_channel",
  "restricted_action_thread_only_channel",
  "restricted_action_non_threadable_channel",
  "ekm_access_denied",
  "access_denied",
  "no_permission",
  "team_access_not_granted",
]);
/** And those of the bot's token or of the message: no write there goes through either. */
const SLACK_REFUSALS = new Set([
  ...SLACK_PLACE_REFUSALS,
  "missing_scope",
  "not_allowed_token_type",
  "invalid_auth",
  "not_authed",
  "account_inactive",
  "token_revoked",
  "cant_update_message",
  "edit_window_closed",
]);
const SLACK_FAULTS = new Set(["internal_error", "fatal_error", "service_unavailable", "request_timeout"]);
/** Discord's refusals of the place: Missing Access, Missing Permissions, thread archived, thread locked. */
export const DISCORD_PLACE_REFUSALS: ReadonlySet<number> = new Set([50001, 50013, 50083, 160005]);
/** And Unknown Channel, Cannot DM the user. */
const DISCORD_REFUSALS = new Set([...DISCORD_PLACE_REFUSALS, 10003, 50007]);

export function faultOf(err: unknown): WriteFault {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const x = e as { data?: { error?: unknown }; code?: unknown; status?: unknown; statusCode?: unknown };
    const slack = x.data?.error;
    if (typeof slack === "string")
      return SLACK_FAULTS.has(slack) ? "transient" : SLACK_REFUSALS.has(slack) ? "refused" : "answered";
    if (typeof x.code === "number" && DISCORD_REFUSALS.has(x.code)) return "refused";
    const status = typeof x.status === "number" ? x.status : x.statusCode;
    if (typeof status === "number" && status >= 400) {
      if (status >= 500 || status === 408 || status === 429) return "transient";
      return status === 401 || status === 403 || status === 404 ? "refused" : "answered";
    }
  }
  return "transient";
}

/**
 * The failures in a row of one reply's writes: whether to try again, when, and whether a
 * write given up may still be repeated (an outage, and not a post that could land twice).
 */
export class WriteRetries {
  private since = -1;
  private tries = 0;
  private at = 0;
  private wake: (() => void) | null = null;
  private repeatable: unknown;

  /**
   * After a write failed with `error`: true when it is to be tried again (after `wait()`),
   * false when it is given up. `blind`: a post that may have landed, with no key to ask by.
   */
  failed(error: unknown, blind: boolean, now = Date.now()): boolean {
    const fault = faultOf(error);
    if (blind || fault === "refused") return false;
    if (this.since < 0) this.since = now;
    this.tries += 1;
    const wait = Math.min(RETRY_LONGEST_MS, RETRY_FIRST_MS * 2 ** (this.tries - 1));
    if ((fault === "answered" && this.tries >= EDIT_ATTEMPTS) || now + wait - this.since > RETRY_BUDGET_MS) {
      if (fault === "transient") this.repeatable = error;
      return false;
    }
    this.at = now + wait;
    return true;
  }

  /** A write failed and waits for its time to be tried again. */
  get waiting(): boolean {
    return this.at > Date.now();
  }

  /** Waits for the time to try the failed write again; only `stop()` ends it early. */
  async wait(): Promise<void> {
    const { done, wake } = nap(this.at - Date.now());
    this.wake = wake;
    await done;
    this.wake = null;
  }

  stop(): void {
    this.wake?.();
  }

  /** `error` ended the writes after an outage, and what failed may be sent again as it is. */
  mayRepeat(error: unknown): boolean {
    return error !== undefined && error === this.repeatable;
  }

  /** A write went through (or a new budget starts): the next failure starts a new streak. */
  reset(): void {
    this.since = -1;
    this.tries = 0;
    this.at = 0;
    this.repeatable = undefined;
  }
}
