import type { App, BlockAction, BlockElementAction, ViewStateValue, ViewSubmitAction } from "@slack/bolt";
import type { WebClient } from "@slack/web-api";
import { log } from "../../log.js";
import type { Interaction, InteractionReply, TurnRunner } from "../../runtime/contract.js";
import { INTERACTION_PREFIX, parseInteractionId } from "../../runtime/interaction-ids.js";
import { PROMPT_FORM } from "../../runtime/prompts.js";
import { AfterAck, within } from "./after-ack.js";
import type { SlackIdentity } from "./events.js";
import { ACK_HOLD_MS } from "./held-acks.js";
import { slackModal, submittedValues } from "./modals.js";
import { tellPrivately } from "./notices.js";
import type { UserGroups } from "./user-groups.js";

export interface ActionDeps {
  runner: TurnRunner;
  identity: () => SlackIdentity;
  writes: WebClient;
  groups: UserGroups;
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
/** Our forms, but for prompts' (commands.ts takes those: they start a question, not an interaction). */
const OUR_FORMS = new RegExp(`^${INTERACTION_PREFIX}(?![^:]+:${PROMPT_FORM}$)`);

/**
 * Clicks (`block_actions`) and form submissions (`view_submission`) on our buttons and
 * modals, recognised by the `sb:` prefix of their action or callback id. Slack shows the
 * person an error when no ack comes within 3 s, and what the runner does may take longer:
 * a click is acked first, a submission once it is checked (its ack may carry the errors).
 */
export function registerActions(app: App, deps: ActionDeps): void {
  const bots = new BotCheck(deps);
  app.action<BlockAction>({ type: "block_actions", action_id: OURS }, async ({ ack, body, action }) => {
    await ack();
    const parsed = parseInteractionId(action.action_id);
    if (!parsed) return;
    const threadTs = body.message?.thread_ts ?? stringOf(body.container.thread_ts);
    const respond = (text: string) =>
      tellPrivately(deps.writes, { user: body.user.id, channel: body.channel?.id, threadTs }, text);
    const outcome = await hand(deps, {
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
      inGroups: (groups) => deps.groups.has(body.user.id, groups, respond),
      // The clicker alone sees the answer under the message they clicked; a click in a modal
      // or the Home tab has no channel, and one where Slack refuses an ephemeral message
      // (they left the channel, the bot was removed) gets it as a direct message.
      respond,
    });
    if (outcome && "open" in outcome) {
      const metadata = formMetadata({
        channel: body.channel?.id ?? body.user.id,
        ...(threadTs ? { threadTs } : {}),
      });
      await deps.writes.views
        .open({ trigger_id: body.trigger_id, view: slackModal(outcome.open, metadata) as never })
        .catch(async (err: unknown) => {
          log.warn({ err, ref: parsed.ref }, "could not open a form");
          await respond("Slack did not open the form in time; press Fill in again.").catch(() => undefined);
        });
    }
  });
  app.view<ViewSubmitAction>(
    { type: "view_submission", callback_id: OUR_FORMS },
    async ({ ack, body, view }) => {
      const parsed = parseInteractionId(view.callback_id);
      if (!parsed) {
        await ack();
        return;
      }
      const origin = originOf(view.private_metadata);
      const replies = new AfterAck((text) =>
        tellPrivately(
          deps.writes,
          { user: body.user.id, channel: origin?.channel, threadTs: origin?.threadTs },
          text,
        ),
      );
      const outcome = (async () =>
        hand(deps, {
          id: `slack:i:${body.trigger_id || `${view.id}:${view.hash}`}`,
          kind: "form",
          ref: parsed.ref,
          value: submittedValues(view.state.values),
          ...(parsed.value ? { via: parsed.value } : {}),
          platform: "slack",
          user: { id: body.user.id, name: body.user.name, bot: await bots.isBot(body.user.id) },
          respond: (text) => replies.say(text),
        }))();
      // The answer is awaited for the ack: a form with errors stays open and shows them under
      // its fields (`response_action: "errors"`, by block id); an empty ack closes it. What
      // the runner says to the person goes after the ack (AfterAck), and a runner still
      // checking when the ack is due (a slow store, a slow users.info) gets the plain ack.
      const settled = await within(outcome, ACK_HOLD_MS);
      const blocks = new Set(view.blocks.map((b) => b.block_id));
      const errors = Object.entries(errorsOf(settled?.value)).filter(([id]) => blocks.has(id));
      try {
        if (errors.length > 0) await ack({ response_action: "errors", errors: Object.fromEntries(errors) });
        else await ack();
      } finally {
        replies.acked();
      }
      if (settled) return;
      // The modal closed before the checks were done: their errors can only be told.
      const late = Object.values(errorsOf(await outcome));
      if (late.length > 0)
        await replies.say(`Your form was not sent: ${late.join(" ")} Press Fill in again to correct it.`);
    },
  );
}

function errorsOf(outcome: InteractionReply | undefined): Record<string, string> {
  return outcome && "errors" in outcome ? outcome.errors : {};
}

async function hand(deps: ActionDeps, interaction: Interaction): Promise<InteractionReply | undefined> {
  try {
    return (await deps.runner.interact(interaction)) ?? undefined;
  } catch (err) {
    // The contract says interact never throws; if it does, the click is lost but logged.
    log.error({ err, ref: interaction.ref }, "interaction failed");
    return undefined;
  }
}

export function originOf(metadata: string | undefined): FormOrigin | undefined {
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
