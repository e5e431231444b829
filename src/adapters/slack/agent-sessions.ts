import type { WebClient } from "@slack/web-api";
import { log } from "../../log.js";
import { WriteDropped, type WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";

export type SessionStatus = "processing" | "active" | "suspended" | "closed";

export interface SessionPlace {
  channel: string;
  threadTs: string;
  /** Who started the session (only used when Slack creates it). */
  user: string;
}

/** Slack's title limit for a session. */
const TITLE_MAX = 200;

/**
 * Slack's agent sessions (`agents.sessions.*`, apps with `agent_view` in their manifest):
 * each thread the bot answers is a session, `processing` while an answer is written (which
 * gives the person Slack's own stop button, arriving as `agent_session_stopped`) and
 * `active` once it is done; its title is the thread's. An app that is not declared as an
 * agent is refused: sessions are then off for the rest of the process, said once, and the
 * bot works as before (assistant threads keep their own status and title).
 */
export class AgentSessions {
  private available: boolean;
  /**
   * Per thread, the status it should have and the one last sent: only the latest counts,
   * so a thread whose statuses wait for the budget (Tier 3, 50 a minute for the workspace)
   * sends one call, not each step it went through.
   */
  private readonly threads = new Map<string, { want: SessionStatus; sent?: SessionStatus }>();

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

  /** Best effort: a session status that cannot be set never ends a turn. Resolves once the latest is sent. */
  async status(place: SessionPlace, status: SessionStatus): Promise<void> {
    if (!this.available) return;
    const key = `${place.channel}:${place.threadTs}`;
    const running = this.threads.get(key);
    if (running) {
      running.want = status;
      return;
    }
    const thread: { want: SessionStatus; sent?: SessionStatus } = { want: status };
    this.threads.set(key, thread);
    try {
      while (this.available && thread.sent !== thread.want) {
        const next = thread.want;
        await this.send(place, next);
        thread.sent = next;
      }
    } finally {
      this.threads.delete(key);
    }
  }

  private async send(place: SessionPlace, status: SessionStatus): Promise<void> {
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
        stopping ? { signal: stopping } : {},
      );
    } catch (err) {
      this.failed(err, "status");
    }
  }

  async rename(place: SessionPlace, title: string): Promise<void> {
    if (!this.available) return;
    try {
      await this.web.agents.sessions.rename({
        channel_id: place.channel,
        thread_ts: place.threadTs,
        title: title.slice(0, TITLE_MAX),
      });
    } catch (err) {
      this.failed(err, "title");
    }
  }

  private failed(err: unknown, what: string): void {
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
    this.available = false;
    log.warn(
      { error: code },
      "Slack refused agent sessions; the app is probably not declared as an agent (add agent_view to its manifest). Answers go on without Slack's session status and stop button",
    );
  }
}
