import type { App, RespondFn } from "@slack/bolt";
import type { WebClient } from "@slack/web-api";
import type { Config } from "../../config.js";
import { log } from "../../log.js";
import { COMMAND_NAMES, type CommandName, type TurnRunner } from "../../runtime/contract.js";
import { type SlackEvents, type SlackIdentity, threadKey } from "./events.js";
import { escapeMrkdwn, fromSlackText, toMrkdwn } from "./mrkdwn.js";

const RUNNER_COMMANDS = new Set<string>(COMMAND_NAMES);

/**
 * Said when a thread-scoped subcommand has no thread to act on (the latest thread is only
 * remembered in memory, so a restart forgets it). Slash commands cannot be used in threads.
 */
export const NO_THREAD =
  "I don't know which thread you mean: mention me in that thread first, then use this command again here.";

/** Subcommands that act on one thread; `model` only when it switches. */
function needsThread(sub: string, arg: string): boolean {
  return sub === "model" ? arg !== "" : sub !== "tools" && sub !== "help";
}

export interface CommandDeps {
  runner: TurnRunner;
  config: Config;
  identity: () => SlackIdentity;
  writes: WebClient;
  events: SlackEvents;
}

export function usage(command: string): string {
  return [
    `Usage: \`${command} <subcommand>\``,
    `• \`${command} ask <question>\`: ask in this channel; I answer in the thread of your question`,
    `• \`${command} tools\`: tool servers, their status and tool counts`,
    `• \`${command} model [name]\`: show the model, or switch your latest thread with me to another one`,
    `• \`${command} new\`: start over in your latest thread with me`,
    `• \`${command} compact\`: fold that thread's older messages into a summary now`,
    `• \`${command} title\`: make a new title for that thread`,
    `• \`${command} help\`: this text`,
    "Slash commands do not work inside threads: there, mention me instead.",
  ].join("\n");
}

/** Splits "ask what is x" into ("ask", "what is x"). */
export function parseSubcommand(text: string): { name: string; arg: string } {
  const trimmed = text.trim();
  const space = trimmed.search(/\s/);
  if (space < 0) return { name: trimmed.toLowerCase(), arg: "" };
  return { name: trimmed.slice(0, space).toLowerCase(), arg: trimmed.slice(space + 1).trim() };
}

/**
 * The one slash command. It is acknowledged at once (Slack allows 3 s); informational
 * answers follow through `response_url`, as ephemeral messages.
 */
export function registerCommands(app: App, deps: CommandDeps): void {
  const name = deps.config.slack.slashCommand;
  app.command(name, async ({ command, ack, respond }) => {
    await ack();
    const me = deps.identity();
    const { name: sub, arg } = parseSubcommand(command.text ?? "");
    const say = (text: string) => respondEphemeral(respond, text);
    try {
      if (sub === "ask") {
        if (!arg) return await say(`Ask me something: \`${name} ask <question>\`.`);
        return await ask(
          deps,
          {
            team: command.team_id,
            channel: command.channel_id,
            user: command.user_id,
            question: arg,
            triggerId: command.trigger_id,
          },
          say,
        );
      }
      if (sub === "" || !RUNNER_COMMANDS.has(sub)) {
        const prefix = sub ? `I do not know \`${escapeMrkdwn(sub)}\`.\n` : "";
        return await say(prefix + usage(name));
      }
      if (sub === "help") return await say(usage(name));
      const latest = deps.events.latestThread(command.channel_id, command.user_id);
      if (!latest && needsThread(sub, arg)) return await say(NO_THREAD);
      // Without a thread, only answers that need none (tools, the model shown) use this stand-in key.
      const key = latest ?? threadKey(command.team_id ?? me.teamId, command.channel_id, "channel");
      const text = await deps.runner.command({
        name: sub as CommandName,
        key,
        platform: "slack",
        user: { id: command.user_id, name: command.user_name },
        arg: arg || undefined,
      });
      await say(text);
    } catch (err) {
      log.warn({ err, sub }, "slash command failed");
      await say("That did not work: something went wrong on my side. Please try again.").catch(
        () => undefined,
      );
    }
  });
}

async function respondEphemeral(respond: RespondFn, text: string): Promise<void> {
  await respond({ response_type: "ephemeral", text: toMrkdwn(text) });
}

/** `ask`: the question is posted in the channel (slash commands leave no message), answered in its thread. */
async function ask(
  deps: CommandDeps,
  q: { team?: string; channel: string; user: string; question: string; triggerId: string },
  say: (text: string) => Promise<void>,
): Promise<void> {
  const me = deps.identity();
  let ts: string | undefined;
  try {
    const posted = await deps.writes.chat.postMessage({
      channel: q.channel,
      text: `<@${q.user}> asked: ${escapeMrkdwn(q.question)}`,
    });
    ts = posted.ts;
  } catch (err) {
    log.info({ err, channel: q.channel }, "slash ask could not post the question");
  }
  if (!ts) {
    await say(
      "I cannot post in this conversation. Invite me to the channel (`/invite @Switchboard`), or mention me.",
    );
    return;
  }
  const team = q.team ?? me.teamId;
  await deps.events.turn({
    eventId: `slash:${q.triggerId}`,
    team,
    key: threadKey(team, q.channel, ts),
    channel: q.channel,
    ts,
    threadRoot: ts,
    author: q.user,
    text: fromSlackText(q.question, me.botUserId),
    withHistory: false,
  });
}
