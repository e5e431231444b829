import type { App, RespondFn, ViewSubmitAction } from "@slack/bolt";
import type { Config } from "../../config.js";
import { log } from "../../log.js";
import { REFUSED_NOTE } from "../../runtime/access.js";
import { type CatalogCommand, findCommand, helpText, needsThread } from "../../runtime/commands.js";
import type { TurnRunner } from "../../runtime/contract.js";
import { INTERACTION_PREFIX, parseInteractionId } from "../../runtime/interaction-ids.js";
import { PROMPT_FORM } from "../../runtime/prompts.js";
import type { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { formMetadata, originOf, registerActions } from "./actions.js";
import type { ReportingWebClient } from "./app.js";
import { type SlackEvents, type SlackIdentity, threadKey } from "./events.js";
import { slackModal, submittedValues } from "./modals.js";
import { escapeMrkdwn, fromSlackText, toMrkdwn } from "./mrkdwn.js";
import { tellPrivately } from "./notices.js";
import { questionNotPosted } from "./post-refusals.js";
import type { UserGroups } from "./user-groups.js";

/**
 * Said when a thread-scoped subcommand has no thread to act on (the latest thread is only
 * remembered in memory, so a restart forgets it). Slash commands cannot be used in threads.
 */
export const NO_THREAD =
  "I don't know which thread you mean: mention me in that thread first, then use this command again here.";

export interface CommandDeps {
  runner: TurnRunner;
  config: Config;
  identity: () => SlackIdentity;
  writes: ReportingWebClient;
  events: SlackEvents;
  groups: UserGroups;
}

/** The help for `/switchboard help`: the catalog, plus `ask`, which only Slack's slash command has. */
export function usage(command: string): string {
  return helpText(`${command} `, {
    code: true,
    extra: [
      {
        usage: `${command} ask <question>`,
        help: "ask in this channel; I answer in the thread of your question",
      },
    ],
    note: "Slash commands do not work inside threads: there, mention me instead. Commands for a thread act on your latest thread with me in this channel.",
  });
}

/** Splits "ask what is x" into ("ask", "what is x"). */
export function parseSubcommand(text: string): { name: string; arg: string } {
  const trimmed = text.trim();
  const space = trimmed.search(/\s/);
  if (space < 0) return { name: trimmed.toLowerCase(), arg: "" };
  return { name: trimmed.slice(0, space).toLowerCase(), arg: trimmed.slice(space + 1).trim() };
}

/** What the text after the slash command asks for: `ask`, a catalog command, or nothing known. */
export function resolveSubcommand(
  text: string,
):
  | { kind: "ask"; arg: string }
  | { kind: "command"; spec: CatalogCommand; arg: string }
  | { kind: "unknown"; name: string } {
  const { name, arg } = parseSubcommand(text);
  if (name === "ask") return { kind: "ask", arg };
  const spec = findCommand(name);
  return spec ? { kind: "command", spec, arg } : { kind: "unknown", name };
}

/**
 * The one slash command. It is acknowledged at once (Slack allows 3 s); informational
 * answers follow through `response_url`, as ephemeral messages. Buttons and forms come in
 * through the same app, so their entry points are registered here too.
 */
export function registerCommands(app: App, deps: CommandDeps): void {
  const name = deps.config.slack.slashCommand;
  app.command(name, async ({ command, ack, respond }) => {
    await ack();
    const me = deps.identity();
    // Slack escapes &, < and > in what the person typed: commands and prompts get the characters.
    const sub = resolveSubcommand(fromSlackText(command.text ?? "", me.botUserId));
    const say = (text: string) => respondEphemeral(deps.writes.scheduler, respond, text);
    try {
      if (sub.kind === "ask") {
        if (!sub.arg) return await say(`Ask me something: \`${name} ask <question>\`.`);
        return await ask(
          deps,
          {
            team: command.team_id,
            channel: command.channel_id,
            user: command.user_id,
            question: sub.arg,
            triggerId: command.trigger_id,
          },
          say,
        );
      }
      if (sub.kind === "unknown") {
        const prefix = sub.name ? `I do not know \`${escapeMrkdwn(sub.name)}\`.\n` : "";
        return await say(prefix + usage(name));
      }
      const { spec, arg } = sub;
      // Slack's help also lists `ask`, which the shared catalog does not know.
      if (spec.name === "help") return await say(usage(name));
      // A server's prompt is asked like `ask`, as if the person had written its text.
      if (spec.name === "prompt" && deps.runner.prompt) {
        const where = { team: command.team_id, channel: command.channel_id, user: command.user_id };
        if (refused(deps, where)) return await say(REFUSED_NOTE);
        const outcome = await deps.runner.prompt(arg, { forms: true });
        if ("say" in outcome) return await say(outcome.say);
        if ("form" in outcome) {
          // The arguments it still needs, in a modal opened with this command's trigger.
          const view = slackModal(outcome.form, formMetadata({ channel: command.channel_id }));
          await deps.writes.views.open({ trigger_id: command.trigger_id, view: view as never });
          return;
        }
        return await ask(deps, { ...where, question: outcome.ask, triggerId: command.trigger_id }, say);
      }
      const latest = await deps.events.latestThread(command.channel_id, command.user_id);
      if (!latest && needsThread(spec, arg)) return await say(NO_THREAD);
      // Without a thread, only answers that need none (tools, the model shown) use this stand-in key.
      const key = latest ?? threadKey(command.team_id ?? me.teamId, command.channel_id, "channel");
      const text = await deps.runner.command({
        name: spec.name,
        key,
        platform: "slack",
        user: { id: command.user_id, name: command.user_name },
        arg: arg || undefined,
        channel: command.channel_id,
        from: { dm: command.channel_id.startsWith("D"), workspace: command.team_id ?? me.teamId },
        inGroups: (groups) => deps.groups.has(command.user_id, groups, say),
      });
      await say(text);
    } catch (err) {
      log.warn({ err, sub: sub.kind === "unknown" ? sub.name : sub.kind }, "slash command failed");
      await say("That did not work: something went wrong on my side. Please try again.").catch(
        () => undefined,
      );
    }
  });
  registerActions(app, deps);
  // A prompt's form, submitted: asked like `prompt` with the typed arguments, in the channel it came from.
  app.view<ViewSubmitAction>(
    { type: "view_submission", callback_id: PROMPT_FORM_ID },
    async ({ ack, body, view }) => {
      await ack();
      const origin = originOf(view.private_metadata);
      const ref = parseInteractionId(view.callback_id)?.ref ?? "";
      if (!origin || !(await deps.runner.firstSight(`slack:i:${body.trigger_id}`))) return;
      const say = (text: string) =>
        tellPrivately(deps.writes, { user: body.user.id, channel: origin.channel }, text);
      try {
        const outcome = deps.runner.promptForm
          ? await deps.runner.promptForm(ref, submittedValues(view.state.values))
          : { say: "Prompts cannot be run here." };
        if (!("ask" in outcome))
          return await say("say" in outcome ? outcome.say : "That prompt needs arguments.");
        const where = { team: body.team?.id, channel: origin.channel, user: body.user.id };
        await ask(deps, { ...where, question: outcome.ask, triggerId: body.trigger_id }, say);
      } catch (err) {
        log.warn({ err }, "a prompt's form failed");
        await say("That did not work: something went wrong on my side. Please try again.").catch(
          () => undefined,
        );
      }
    },
  );
}

/** The callback id of a prompt's form (`sb:{ref}:prompt`); other forms go to the runner's interactions. */
export const PROMPT_FORM_ID = new RegExp(`^${INTERACTION_PREFIX}[^:]+:${PROMPT_FORM}$`);

/**
 * An answer through the command's `response_url`, a write like any other: it goes through
 * the workspace's scheduler, first in line. The URL is not a Web API method and takes five
 * answers in 30 minutes, far more than a command gives, so it spends no bucket.
 */
async function respondEphemeral(scheduler: WriteScheduler, respond: RespondFn, text: string): Promise<void> {
  await scheduler.run({
    lane: "final",
    buckets: [],
    what: "response_url",
    run: () => respond({ response_type: "ephemeral", text: toMrkdwn(text) }),
  });
}

/**
 * Whether the access lists refuse this person here: asked before anything is shown or a
 * server is asked for a prompt, as a mention is checked before its :eyes:. Told privately
 * every time (a slash command is answered, and only they see it).
 */
function refused(deps: CommandDeps, q: { team?: string; channel: string; user: string }): boolean {
  const verdict = deps.runner.admit?.({
    platform: "slack",
    channel: q.channel,
    user: { id: q.user },
    from: { dm: q.channel.startsWith("D"), workspace: q.team ?? deps.identity().teamId },
  });
  return verdict !== undefined && verdict !== "yes";
}

/**
 * `ask`: the question (plain text, as the person meant it) is posted in the channel (slash
 * commands leave no message), answered in its thread.
 */
async function ask(
  deps: CommandDeps,
  q: { team?: string; channel: string; user: string; question: string; triggerId: string },
  say: (text: string) => Promise<void>,
): Promise<void> {
  const me = deps.identity();
  if (refused(deps, q)) return await say(REFUSED_NOTE);
  let ts: string | undefined;
  let failure: unknown;
  try {
    const posted = await deps.writes.chat.postMessage({
      channel: q.channel,
      text: `<@${q.user}> asked: ${escapeMrkdwn(q.question)}`,
    });
    ts = posted.ts;
  } catch (err) {
    failure = err;
    log.info({ err, channel: q.channel }, "slash ask could not post the question");
  }
  if (!ts) return await say(questionNotPosted(failure, q.channel));
  const team = q.team ?? me.teamId;
  // Keyed by this workspace, as a mention is (see SlackEvents.receive), whoever asked.
  const key = threadKey(me.teamId, q.channel, ts);
  // Thread commands that follow (stop, new, model) act on this thread, as after a mention.
  await deps.events.turn({
    before: deps.events.remember(q.channel, q.user, key),
    eventId: `slash:${q.triggerId}`,
    team,
    key,
    channel: q.channel,
    ts,
    threadRoot: ts,
    author: q.user,
    text: q.question,
    withHistory: false,
  });
}
