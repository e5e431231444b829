import { log } from "../../log.js";
import { RateBudget } from "../stream.js";
import type { Adapter, AdapterDeps } from "../types.js";
import { createSlackConnection, type SlackAppOptions } from "./app.js";
import { registerCommands } from "./commands.js";
import { SlackEvents, type SlackIdentity } from "./events.js";

export { route, threadKey } from "./events.js";
export { fromSlackText, toMrkdwn, toSlackMarkdown } from "./mrkdwn.js";
export { SLACK_MESSAGE_LIMIT } from "./reply.js";

export interface SlackAdapterOptions extends SlackAppOptions {
  /**
   * Message writes per minute for the whole workspace. Slack's `chat.update` is Tier 3,
   * about 50 per minute per workspace, and every reply draws on it.
   */
  writesPerMinute?: number;
}

export interface SlackAdapter extends Adapter {
  /** The HTTP receiver's port once started (HTTP mode only). */
  port(): number | undefined;
}

export function createSlackAdapter(deps: AdapterDeps, opts: SlackAdapterOptions = {}): SlackAdapter {
  const { config, secrets, runner } = deps;
  const conn = createSlackConnection(config, secrets, opts);
  const perMinute = opts.writesPerMinute ?? 50;
  // A burst of a few writes lets a new reply show at once; the refill keeps the workspace under Tier 3.
  const budget = new RateBudget({
    capacity: Math.max(1, Math.min(10, Math.floor(perMinute / 5))),
    refillPerSec: perMinute / 60,
  });
  let identity: SlackIdentity | undefined;
  const me = (): SlackIdentity => {
    if (!identity) throw new Error("Slack adapter used before start()");
    return identity;
  };
  const events = new SlackEvents({
    runner,
    config,
    token: secrets.slackBotToken ?? "",
    identity: me,
    writes: conn.writes,
    reads: conn.reads,
    budget,
  });
  events.register(conn.app);
  registerCommands(conn.app, { runner, config, identity: me, writes: conn.writes, events });
  conn.app.error(async (err) => {
    log.error({ err }, "slack listener failed");
  });

  return {
    platform: "slack",
    async start() {
      const auth = await conn.writes.auth.test();
      if (!auth.user_id || !auth.team_id)
        throw new Error("Slack auth.test did not name the bot user and team");
      identity = { teamId: auth.team_id, botUserId: auth.user_id, botId: auth.bot_id ?? "" };
      await conn.start();
      log.info({ mode: conn.mode, team: identity.teamId, bot: identity.botUserId }, "slack connected");
    },
    async stop() {
      await conn.stop();
    },
    ready: () => conn.connected(),
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
