import type { App, BlockAction, BlockElementAction, ViewStateValue, ViewSubmitAction } from "@slack/bolt";
import type { WebClient } from "@slack/web-api";
import { log } from "../../log.js";
import type { Interaction, TurnRunner } from "../../runtime/contract.js";
import { INTERACTION_PREFIX, parseInteractionId } from "../../runtime/interaction-ids.js";
import type { SlackIdentity } from "./events.js";
import { toMrkdwn } from "./mrkdwn.js";

export interface ActionDeps {
  runner: TurnRunner;
  identity: () => SlackIdentity;
  writes: WebClient;
}

/** Where a form's answer goes: set as the modal's `private_metadata` by whoever opens the form. */
export interface FormOrigin {
  channel: string;
  threadTs?: string;
}

export function formMetadata(origin: FormOrigin): string {
  return JSON.stringify({ channel: origin.channel, thread_ts: origin.threadTs });
}

const OURS = new RegExp(`^${INTERACTION_PREFIX}`);

/**
 * Clicks (`block_actions`) and form submissions (`view_submission`) on our buttons and
 * modals, recognised by the `sb:` prefix of their action or callback id. Each is acked
 * first: Slack shows the person an error when no ack comes within 3 s, and what the runner
 * does next may take longer than that.
 */
export function registerActions(app: App, deps: ActionDeps): void {
  const bots = new BotCheck(deps);
  app.action<BlockAction>({ type: "block_actions", action_id: OURS }, async ({ ack, body, action }) => {
    await ack();
    const parsed = parseInteractionId(action.action_id);
    if (!parsed) return;
    const threadTs = body.message?.thread_ts ?? stringOf(body.container.thread_ts);
    await hand(deps, {
      id: `slack:i:${body.trigger_id || `${action.action_ts}:${body.user.id}`}`,
      kind: "button",
      ref: parsed.ref,
      value: elementValue(action) ?? parsed.value ?? "",
      platform: "slack",
      user: {
        id: body.user.id,
        name: body.user.name ?? body.user.username,
        bot: await bots.isBot(body.user.id),
      },
      ...(body.message?.ts ? { messageId: body.message.ts } : {}),
      inGroups: (groups) => inGroups(deps.writes, body.user.id, groups),
      // The clicker sees the answer under the message they clicked; a click in a modal or
      // the Home tab has no channel, so the answer comes as a direct message.
      respond: (text) => answerPrivately(deps.writes, body.user.id, text, body.channel?.id, threadTs),
    });
  });
  app.view<ViewSubmitAction>({ type: "view_submission", callback_id: OURS }, async ({ ack, body, view }) => {
    // An empty ack closes the modal, which is what a person expects after pressing Submit.
    // Errors shown in the modal (`response_action: "errors"`) would have to be decided before
    // the ack, i.e. within 3 s, and name one of the form's blocks; the runner's answer may be
    // later and about the whole form. So the answer goes where the form was opened from.
    await ack();
    const parsed = parseInteractionId(view.callback_id);
    if (!parsed) return;
    const origin = originOf(view.private_metadata);
    await hand(deps, {
      id: `slack:i:${body.trigger_id || `${view.id}:${view.hash}`}`,
      kind: "form",
      ref: parsed.ref,
      value: formValues(view.state.values),
      platform: "slack",
      user: { id: body.user.id, name: body.user.name, bot: await bots.isBot(body.user.id) },
      respond: (text) => answerPrivately(deps.writes, body.user.id, text, origin?.channel, origin?.threadTs),
    });
  });
}

/** Whether `user` is a member of one of the user groups (usergroups.users.list, scope usergroups:read). */
async function inGroups(web: WebClient, user: string, groups: string[]): Promise<boolean> {
  for (const usergroup of groups) {
    try {
      const res = await web.usergroups.users.list({ usergroup });
      if (res.users?.includes(user)) return true;
    } catch (err) {
      log.warn({ err, usergroup }, "could not read a user group's members; its members are not approvers");
    }
  }
  return false;
}

async function hand(deps: ActionDeps, interaction: Interaction): Promise<void> {
  try {
    await deps.runner.interact(interaction);
  } catch (err) {
    // The contract says interact never throws; if it does, the click is lost but logged.
    log.error({ err, ref: interaction.ref }, "interaction failed");
  }
}

/**
 * An ephemeral message in the channel (and thread) when there is one; otherwise a direct
 * message, which Slack delivers to the app's Messages tab when the channel is the user's id.
 */
async function answerPrivately(
  writes: WebClient,
  user: string,
  text: string,
  channel?: string,
  threadTs?: string,
): Promise<void> {
  const mrkdwn = toMrkdwn(text);
  if (channel) {
    await writes.chat.postEphemeral({
      channel,
      user,
      text: mrkdwn,
      ...(threadTs ? { thread_ts: threadTs } : {}),
    });
    return;
  }
  await writes.chat.postMessage({ channel: user, text: mrkdwn });
}

function originOf(metadata: string | undefined): FormOrigin | undefined {
  if (!metadata) return undefined;
  try {
    const parsed = JSON.parse(metadata) as { channel?: unknown; thread_ts?: unknown };
    if (typeof parsed.channel !== "string") return undefined;
    return { channel: parsed.channel, threadTs: stringOf(parsed.thread_ts) };
  } catch {
    return undefined;
  }
}

function stringOf(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

type ElementState = Partial<ViewStateValue> & { value?: string | null };

/** What a button or input holds, whatever its kind: one string (several are joined by commas). */
function elementValue(element: BlockElementAction | ElementState): string | undefined {
  const e = element as ElementState;
  const many = e.selected_options?.map((o) => o.value) ?? e.selected_users ?? e.selected_conversations;
  const single =
    e.value ??
    e.selected_option?.value ??
    e.selected_user ??
    e.selected_conversation ??
    e.selected_channel ??
    e.selected_date ??
    e.selected_time ??
    (e.selected_date_time == null ? undefined : String(e.selected_date_time));
  return single ?? (many ?? e.selected_channels)?.join(",") ?? undefined;
}

/** A form's fields by input name (the element's action id); empty inputs are "". */
export function formValues(values: Record<string, Record<string, ViewStateValue>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const block of Object.values(values)) {
    for (const [name, state] of Object.entries(block)) out[name] = elementValue(state) ?? "";
  }
  return out;
}

/**
 * Whether a clicker is a bot: Slack's payload does not say, so users.info is asked once per
 * user. A failed lookup counts as a person, so that a Slack hiccup does not swallow a click.
 */
class BotCheck {
  private readonly known = new Map<string, boolean>();

  constructor(private readonly deps: ActionDeps) {}

  async isBot(user: string): Promise<boolean> {
    if (user === this.deps.identity().botUserId) return true;
    const known = this.known.get(user);
    if (known !== undefined) return known;
    try {
      const res = await this.deps.writes.users.info({ user });
      const bot = Boolean(res.user?.is_bot);
      if (this.known.size > 10_000) this.known.clear();
      this.known.set(user, bot);
      return bot;
    } catch (err) {
      log.debug({ err, user }, "users.info failed; the clicker counts as a person");
      return false;
    }
  }
}
