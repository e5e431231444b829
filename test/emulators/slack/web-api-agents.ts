import { type Params, str } from "./http-util.js";
import { type ApiContext, fail, type Handler } from "./web-api-context.js";

export type AgentSessionStatus = "processing" | "active" | "suspended" | "closed";
const STATUSES = new Set<string>(["processing", "active", "suspended", "closed"]);
const TITLE_MAX = 200;

/** One thread's agent session as Slack keeps it; `statuses` is every status set, in order. */
export interface AgentSession {
  channel: string;
  threadTs: string;
  status: AgentSessionStatus;
  title?: string;
  initiator?: string;
  statuses: AgentSessionStatus[];
}

export const sessionKey = (channel: string, threadTs: string) => `${channel}:${threadTs}`;

/**
 * agents.sessions.setStatus / rename (docs.slack.dev, "Agent sessions"): setStatus creates
 * the thread's session on first use (its title and initiator count only then) and moves
 * it between processing, active, suspended and closed; rename needs an existing session.
 * A thread-based session needs its root message to exist, and its initiator must be a
 * person (the emulator knows no channel membership). These refuse one thread's session;
 * apps not declared as agents are refused every session, which tests do with
 * `api.refuse(method, "missing_scope")`.
 */
export function agentHandlers(ctx: ApiContext, sessions: Map<string, AgentSession>): Record<string, Handler> {
  const { state } = ctx;
  const place = (p: Params): { channel: string; threadTs: string } => {
    const channel = str(p, "channel_id") ?? fail("channel_not_found");
    const threadTs = str(p, "thread_ts") ?? fail("invalid_arguments");
    if (!state.channels.has(channel)) fail("channel_not_found");
    if (!state.find(channel, threadTs)) fail("thread_not_found");
    return { channel, threadTs };
  };
  const title = (p: Params): string | undefined => {
    const t = str(p, "title");
    if (t !== undefined && (t.length === 0 || t.length > TITLE_MAX)) fail("invalid_title");
    return t;
  };
  return {
    "agents.sessions.setStatus": (p) => {
      const status = str(p, "status") ?? "";
      if (!STATUSES.has(status)) fail("invalid_status");
      const { channel, threadTs } = place(p);
      const key = sessionKey(channel, threadTs);
      let session = sessions.get(key);
      if (!session) {
        const t = title(p);
        const initiator = str(p, "initiator_user_id");
        // "Must be a member of the channel": a person (users are made on first use, as
        // everywhere in the emulator), not another app's bot nor a bot id. Slack does not
        // document the code; the one it uses for a user outside a channel stands in for it.
        if (initiator !== undefined && (!/^[UW]/.test(initiator) || state.user(initiator).isBot))
          fail("user_not_in_channel");
        session = {
          channel,
          threadTs,
          status: status as AgentSessionStatus,
          statuses: [],
          ...(t ? { title: t } : {}),
          ...(initiator ? { initiator } : {}),
        };
        sessions.set(key, session);
      }
      session.status = status as AgentSessionStatus;
      session.statuses.push(session.status);
      return { status: session.status, ...(session.title ? { title: session.title } : {}) };
    },
    "agents.sessions.rename": (p) => {
      const { channel, threadTs } = place(p);
      const session = sessions.get(sessionKey(channel, threadTs)) ?? fail("session_not_found");
      session.title = title(p) ?? fail("invalid_title");
      return { title: session.title };
    },
  };
}
