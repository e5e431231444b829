import type { WebClient } from "@slack/web-api";
import type { ThreadKey } from "../../core/thread.js";
import { log } from "../../log.js";
import { NOTHING_TO_STOP } from "../../runtime/commands.js";
import type { TurnRunner } from "../../runtime/contract.js";
import { WriteDropped, type WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { tellPrivately } from "./notices.js";
import type { UserGroups } from "./user-groups.js";

export type SessionStatus = "processing" | "active" | "suspended" | "closed";

export interface SessionPlace {
  channel: string;
  threadTs: string;
  /** Who started the session (only used when Slack creates it). */
  user: string;
}

/** Slack's title limit for a session. */
const TITLE_MAX = 200;
/** A session shown as working this late is not worth the budget: the answer is well under way. */
const PROCESSING_LATE_MS = 3_000;
const MAX_REMEMBERED = 10_000;

const keyOf = (place: SessionPlace) => `${place.channel}:${place.threadTs}`;

/**
 * Refusals that say the app cannot have agent sessions anywhere: a scope or token Slack's
 * common errors name, or a method the workspace does not offer. Slack does not document
 * what an app without `agent_view` gets; `missing_scope` is the likeliest, and the
 * emulator's. Any other refusal concerns one thread (a channel the bot is not in, a thread
 * gone, an initiator who is not a person in it) and must not take Slack's status and stop
 * button from every other thread.
 */
const APP_REFUSALS = new Set([
  "missing_scope",
  "not_allowed_token_type",
  "no_permission",
  "access_denied",
  "unknown_method",
  "method_deprecated",
  "deprecated_endpoint",
  "feature_disabled",
  "not_authed",
  "invalid_auth",
  "account_inactive",
  "token_revoked",
  "token_expired",
  "team_access_not_granted",
  "ekm_access_denied",
  "enterprise_is_restricted",
]);

/**
 * Slack's agent sessions (`agents.sessions.*`, apps with `agent_view` in their manifest):
 * each thread the bot answers is a session, `processing` while an answer is written (which
 * gives the person Slack's own stop button, arriving as `agent_session_stopped`) and
 * `active` once it is done; its title is the thread's. An app that is not declared as an
 * agent is refused: sessions are then off for the rest of the process, said once, and the
 * bot works as before (assistant threads keep their own status and title). A refusal about
 * one thread leaves that thread without a session, and the others with theirs.
 */
export class AgentSessions {
  private available: boolean;
  /**
   * Per thread, the status it should have: only the latest counts, so a thread whose
   * statuses wait for the budget sends one call, not each step it went through.
   */
  private readonly pending = new Map<string, SessionStatus>();
  /** The last status sent per thread: a thread without one has no session to move on or rename. */
  private readonly sent = new Map<string, SessionStatus>();
  /** Per thread, the statuses on their way to Slack, until the last one has gone or been dropped. */
  private readonly flights = new Map<string, Promise<void>>();

  constructor(
    private readonly web: WebClient,
    enabled: boolean,
    private readonly pacing: { scheduler: WriteScheduler; stopping?: AbortSignal },
  ) {
    this.available = enabled;
  }

  get on(): boolean {
    return this.available;
  }

  /**
   * Best effort: a session status never ends or delays a turn. A `processing` that cannot
   * go out within PROCESSING_LATE_MS (the workspace's Tier 3 spent by other threads) is
   * not sent, and then neither is the status after it: the thread has no session.
   */
  async status(place: SessionPlace, status: SessionStatus): Promise<void> {
    if (!this.available) return;
    const key = keyOf(place);
    const running = this.pending.has(key);
    this.pending.set(key, status);
    if (running) return;
    const flight = this.sendLatest(place, key).finally(() => {
      this.pending.delete(key);
      this.flights.delete(key);
    });
    this.flights.set(key, flight);
    await flight;
  }

  /**
   * Moves on a session a dead process left working (its turn ends here with a note): Slack
   * shows it `processing`, with its stop button, until told otherwise, whatever this
   * process last sent it (nothing, or the end of an earlier answer). Slack has no call to
   * ask whether the thread has one, so where the dead process's `processing` never went
   * out this makes the thread's session, `active`.
   */
  async endLeft(place: SessionPlace): Promise<void> {
    const key = keyOf(place);
    if (this.available && !this.pending.has(key)) this.remember(key, "processing");
    await this.status(place, "active");
  }

  private async sendLatest(place: SessionPlace, key: string): Promise<void> {
    for (;;) {
      const next = this.pending.get(key) as SessionStatus;
      const last = this.sent.get(key);
      if (next === last || (last === undefined && next !== "processing")) return;
      if (!(await this.send(place, next))) return;
      this.remember(key, next);
    }
  }

  /**
   * Whether Slack shows the thread's session as working, with its stop button: asked once
   * the status on its way has gone or been dropped. A thread whose `processing` was
   * dropped (late under load, a 429) or refused has no stop button of Slack's, even
   * where sessions are on.
   */
  async working(place: SessionPlace): Promise<boolean> {
    const key = keyOf(place);
    await this.flights.get(key);
    return this.available && this.sent.get(key) === "processing";
  }

  private remember(key: string, status: SessionStatus): void {
    this.sent.delete(key);
    this.sent.set(key, status);
    // Oldest first: a long-running process keeps the threads it answered lately.
    if (this.sent.size > MAX_REMEMBERED) this.sent.delete(this.sent.keys().next().value as string);
  }

  /** True when Slack took it. */
  private async send(place: SessionPlace, status: SessionStatus): Promise<boolean> {
    const { scheduler, stopping } = this.pacing;
    try {
      // A stopping process does not wait for the budget: its sessions are left to the replica taking over.
      await scheduler.as(
        "update",
        () =>
          this.web.agents.sessions.setStatus({
            channel_id: place.channel,
            thread_ts: place.threadTs,
            status,
            ...(status === "processing" && place.user ? { initiator_user_id: place.user } : {}),
          }),
        {
          ...(stopping ? { signal: stopping } : {}),
          ...(status === "processing" ? { dropAfterMs: PROCESSING_LATE_MS } : {}),
        },
      );
      return true;
    } catch (err) {
      this.failed(err, "status", place);
      return false;
    }
  }

  /** Whether the thread has a session here, which a title would name. */
  has(place: SessionPlace): boolean {
    return this.available && this.sent.has(keyOf(place));
  }

  async rename(place: SessionPlace, title: string): Promise<void> {
    if (!this.has(place)) return;
    try {
      await this.web.agents.sessions.rename({
        channel_id: place.channel,
        thread_ts: place.threadTs,
        title: title.slice(0, TITLE_MAX),
      });
    } catch (err) {
      this.failed(err, "title", place);
    }
  }

  private failed(err: unknown, what: string, place: SessionPlace): void {
    const code = (err as { data?: { error?: string } }).data?.error;
    if (
      err instanceof WriteDropped ||
      this.pacing.stopping?.aborted ||
      code === "ratelimited" ||
      code === undefined
    ) {
      log.debug({ err, what }, "agent session not updated");
      return;
    }
    if (!APP_REFUSALS.has(code)) {
      // Whatever Slack keeps of it, this thread's session is not one to move on or name.
      this.sent.delete(keyOf(place));
      log.info(
        { error: code, what, channel: place.channel, threadTs: place.threadTs },
        "Slack refused this thread's agent session; its answer goes on without Slack's session status and stop button",
      );
      return;
    }
    this.available = false;
    log.warn(
      { error: code },
      "Slack refused agent sessions; the app is probably not declared as an agent (add agent_view to its manifest). Answers go on without Slack's session status and stop button",
    );
  }
}

/**
 * Slack's stop button was pressed on a session: the same Stop as ours, for the same people.
 * Stopped, the answer says so itself and its end moves the session on; otherwise the
 * person learns why privately. Slack leaves the session `processing` at a press ("the
 * session status does not update automatically when the user clicks stop",
 * agent_session_stopped docs), and its stop button with it: a press someone may not make
 * leaves the answer going, so the session stays working, and the asker keeps the button
 * (the private Stop is not offered where Slack shows one). Only where no answer is being
 * written (it has just ended, its own status still on the way) is the session moved on.
 */
export async function sessionStopped(
  deps: { runner: TurnRunner; writes: WebClient; groups: UserGroups; sessions?: AgentSessions },
  key: ThreadKey,
  place: SessionPlace,
  name: string | undefined,
): Promise<void> {
  const by = { id: place.user, ...(name ? { name } : {}) };
  const tell = (text: string) => tellPrivately(deps.writes, place, text);
  const said =
    (await deps.runner.stop?.(key, by, (groups) => deps.groups.has(place.user, groups, tell))) ?? "";
  if (!said) return;
  await deps.writes.chat
    .postEphemeral({ channel: place.channel, user: place.user, thread_ts: place.threadTs, text: said })
    .catch((err: unknown) => log.debug({ err }, "stop refusal not shown"));
  if (said === NOTHING_TO_STOP) await deps.sessions?.status(place, "active");
}
