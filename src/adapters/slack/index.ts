import { SwitchboardError } from "../../core/errors.js";
import type { ThreadKey } from "../../core/thread.js";
import { decodeThread, type ThreadRef } from "../../core/thread.js";
import { connectFailure } from "../../core/unreachable.js";
import { log } from "../../log.js";
import type { Adapter, AdapterDeps } from "../../runtime/contract.js";
import { SharedBudgets } from "../../runtime/scheduler/shared-budgets.js";
import { AgentSessions } from "./agent-sessions.js";
import { createSlackConnection, type SlackAppOptions } from "./app.js";
import { registerCommands } from "./commands.js";
import { SlackEvents, type SlackIdentity } from "./events.js";
import { Eyes } from "./eyes.js";
import { slackFile } from "./files.js";
import { recoverSlackReply } from "./recover.js";
import { SLACK_MESSAGE_LIMIT, SlackReply } from "./reply.js";
import { StatusClears } from "./status-clears.js";
import { UserGroups } from "./user-groups.js";
import { slackWritePolicy } from "./write-policy.js";

export { route, threadKey } from "./events.js";
export { fromSlackText, toMrkdwn, toSlackMarkdown } from "./mrkdwn.js";
export { SLACK_MESSAGE_LIMIT } from "./reply.js";

export interface SlackAdapterOptions extends SlackAppOptions {
  /** Native streaming (when `slack.nativeStreaming` is on); tests shorten the lifetime and segments. */
  stream?: {
    /** Slack's stream lifetime (~5 min, UNVERIFIED); segments rotate at 80% of it. */
    lifetimeMs?: number;
    /** Characters per streamed message (default: the same as a posted message). */
    segmentChars?: number;
  };
  /** How long after it was set a thread's status is set again (default 90 s; tests shorten it). */
  statusRefreshMs?: number;
}

/** `slack:{team}:{channel}:{thread ts}` -> where to write, or an error for another shape. */
export function parseThreadKey(key: ThreadKey): { team: string; channel: string; threadTs: string } {
  let ref: ThreadRef | undefined;
  try {
    ref = decodeThread(key);
  } catch {}
  if (ref?.platform !== "slack") throw new Error(`Not a Slack thread key: ${key}`);
  return { team: ref.team, channel: ref.channel, threadTs: ref.thread };
}

export interface SlackAdapter extends Adapter {
  /** The HTTP receiver's port once started (HTTP mode only). */
  port(): number | undefined;
}

export function createSlackAdapter(deps: AdapterDeps, opts: SlackAdapterOptions = {}): SlackAdapter {
  const { config, secrets, runner } = deps;
  // Shared with the other replicas of this app through the store (one workspace, one budget).
  const budgets = new SharedBudgets(slackWritePolicy, deps.state, "slack");
  const conn = createSlackConnection(config, secrets, opts, deps.platformError, budgets);
  // Every write of the workspace goes through one scheduler, the writes client's.
  const scheduler = conn.writes.scheduler;
  const native = config.slack.nativeStreaming
    ? {
        lifetimeMs: opts.stream?.lifetimeMs ?? 5 * 60_000,
        segmentChars: opts.stream?.segmentChars ?? SLACK_MESSAGE_LIMIT,
      }
    : undefined;
  let identity: SlackIdentity | undefined;
  const me = (): SlackIdentity => {
    if (!identity) throw new Error("Slack adapter used before start()");
    return identity;
  };
  const stopping = new AbortController();
  const sessions = new AgentSessions(conn.writes, config.slack.agentSessions, {
    scheduler,
    stopping: stopping.signal,
  });
  const clears = new StatusClears(opts.statusRefreshMs);
  const eyes = new Eyes({ writes: conn.writes, scheduler, state: deps.state });
  const groups = new UserGroups(conn.reads);
  groups.listen(conn.app);
  const events = new SlackEvents({
    sessions,
    clears,
    runner,
    config,
    token: secrets.slackBotToken ?? "",
    identity: me,
    writes: conn.writes,
    reads: conn.reads,
    scheduler,
    native,
    eyes,
    groups,
    state: deps.state,
    ...(deps.promptSuggestions ? { promptSuggestions: deps.promptSuggestions } : {}),
  });
  events.register(conn.app);
  registerCommands(conn.app, { runner, config, identity: me, writes: conn.writes, events, groups });
  conn.app.error(async (err) => {
    log.error({ err }, "slack listener failed");
  });

  return {
    platform: "slack",
    async start() {
      const api = secrets.slackApiUrl ?? "https://slack.com/api/";
      const refused = (token: string) => (err: unknown) => {
        const failure = connectFailure("Slack", api, err, token);
        throw failure ? new SwitchboardError("platform_error", failure.message, { cause: err }) : err;
      };
      const auth = await conn.writes.auth.test().catch(refused("SLACK_BOT_TOKEN"));
      if (!auth.user_id || !auth.team_id)
        throw new Error("Slack auth.test did not name the bot user and team");
      identity = { teamId: auth.team_id, botUserId: auth.user_id, botId: auth.bot_id ?? "" };
      // The bot token passed auth.test above: what Socket Mode's start refuses is the app token.
      await conn.start().catch(refused(conn.mode === "socket" ? "SLACK_APP_TOKEN" : "SLACK_BOT_TOKEN"));
      log.info({ mode: conn.mode, team: identity.teamId, bot: identity.botUserId }, "slack connected");
      eyes.start(identity.teamId);
    },
    async stop() {
      stopping.abort();
      await conn.stop();
      // Events already acknowledged reach the runner before the runtime drains.
      await events.handedOver();
    },
    // Only after the drain: closed budgets take no share, and the answers finishing in the
    // drain still write through them (as Discord closes its own once its turns settle).
    async close() {
      await eyes.close();
      await budgets.close();
    },
    ready: () => conn.connected(),
    async recover(key, address, note) {
      const place = parseThreadKey(key);
      const intervalMs = config.slack.updateIntervalMs;
      await recoverSlackReply(
        { writes: conn.writes, reads: conn.reads, scheduler, intervalMs, botId: me().botId, sessions },
        place,
        address,
        note,
      );
    },
    replyFor(key, address) {
      const place = parseThreadKey(key);
      // Without the asker, ephemeral notices fall back to the thread.
      return new SlackReply(
        {
          web: conn.writes,
          reads: conn.reads,
          scheduler,
          intervalMs: config.slack.updateIntervalMs,
          sessions,
          clears,
          botId: me().botId,
        },
        { ...place, user: address.asker ?? "", assistant: false },
        address,
      );
    },
    fileFrom: (file) => slackFile(file, secrets.slackBotToken ?? ""),
    unmark: (_key, mark) => eyes.remove(mark),
    port: () => listeningPortOf(conn.app),
  };
}

function listeningPortOf(app: unknown): number | undefined {
  const receiver = (app as { receiver?: { server?: { address(): unknown } } }).receiver;
  const address = receiver?.server?.address();
  return address && typeof address === "object" && "port" in address
    ? (address as { port: number }).port
    : undefined;
}
