import type { WebClient } from "@slack/web-api";
import { log } from "../../log.js";
import { WriteDropped } from "../../runtime/scheduler/write-scheduler.js";

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

  constructor(
    private readonly web: WebClient,
    enabled: boolean,
  ) {
    this.available = enabled;
  }

  get on(): boolean {
    return this.available;
  }

  /** Best effort: a session status that cannot be set never ends a turn. */
  async status(place: SessionPlace, status: SessionStatus, title?: string): Promise<void> {
    if (!this.available) return;
    try {
      await this.web.agents.sessions.setStatus({
        channel_id: place.channel,
        thread_ts: place.threadTs,
        status,
        ...(status === "processing" ? { initiator_user_id: place.user } : {}),
        ...(title ? { title: title.slice(0, TITLE_MAX) } : {}),
      });
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
    if (err instanceof WriteDropped || code === "ratelimited" || code === undefined) {
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
