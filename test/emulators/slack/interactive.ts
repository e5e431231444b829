import { randomUUID } from "node:crypto";
import type { Delivery } from "./delivery.js";
import { interactiveUser } from "./events.js";
import type { Params } from "./http-util.js";
import type { SlackEmulator } from "./index.js";
import { issueTrigger } from "./modals.js";
import { APP_ID, messageJson, TEAM_ID } from "./state.js";

export type { InputState, InputValue } from "./view-state.js";
export {
  type SubmitHandle,
  type SubmitOptions,
  type SubmitOutcome,
  submitView,
} from "./view-submission.js";

/**
 * Interactive payloads (`block_actions`, `view_submission`) in the shapes Slack sends them
 * (docs.slack.dev "block_actions payload" / "view_submission payload", and Bolt's
 * `BlockAction` / `ViewSubmitAction` types). Delivered like slash commands: not retried,
 * and without an ack within the deadline the person sees an error (`delivery.failed`).
 * Each carries a fresh trigger_id, which the app can exchange once, within the emulator's
 * `triggerTtlMs`, for views.open / views.push.
 */

function actionTs(): string {
  const now = Date.now();
  return `${Math.floor(now / 1000)}.${String(now % 1000).padStart(3, "0")}${String(Math.floor(Math.random() * 1000)).padStart(3, "0")}`;
}

export interface ClickOptions {
  user: string;
  channel: string;
  /** The message holding the button (it must exist in the emulator). */
  messageTs: string;
  actionId: string;
  /** A button's `value`; omitted for buttons without one. */
  value?: string;
  /**
   * A link button's `url`: Slack opens the link and still sends block_actions (the app
   * must ack it, or the person sees a warning icon next to the button).
   */
  url?: string;
  /** A static select instead of a button: the chosen option's value. */
  selected?: string;
  /** One of a `feedback_buttons` element's two buttons (its `value`, required then) instead of a button. */
  feedback?: boolean;
  blockId?: string;
  /** Deliver the very same payload this many times. */
  times?: number;
}

/** A person clicks a button (or picks an option) on a message: a `block_actions` payload. */
export function clickAction(
  emu: SlackEmulator,
  o: ClickOptions,
): { deliveries: Delivery[]; payload: Params } {
  const message = emu.state.find(o.channel, o.messageTs);
  if (!message) throw new Error(`emulator: no message ${o.channel}/${o.messageTs}`);
  const blockId = o.blockId ?? "actions";
  const action: Params = o.feedback
    ? {
        type: "feedback_buttons",
        action_id: o.actionId,
        block_id: blockId,
        value: o.value,
        action_ts: actionTs(),
      }
    : o.selected === undefined
      ? {
          type: "button",
          action_id: o.actionId,
          block_id: blockId,
          text: { type: "plain_text", text: "Click", emoji: true },
          ...(o.value === undefined ? {} : { value: o.value }),
          ...(o.url === undefined ? {} : { url: o.url }),
          action_ts: actionTs(),
        }
      : {
          type: "static_select",
          action_id: o.actionId,
          block_id: blockId,
          selected_option: { text: { type: "plain_text", text: o.selected, emoji: true }, value: o.selected },
          placeholder: { type: "plain_text", text: "Pick one", emoji: true },
          action_ts: actionTs(),
        };
  const payload: Params = {
    type: "block_actions",
    user: interactiveUser(emu.state, o.user),
    api_app_id: APP_ID,
    token: "verification-token",
    container: {
      type: "message",
      message_ts: message.ts,
      channel_id: o.channel,
      is_ephemeral: false,
      ...(message.thread_ts ? { thread_ts: message.thread_ts } : {}),
    },
    trigger_id: issueTrigger(emu.state, o.user, "block_actions"),
    team: { id: TEAM_ID, domain: "emulator" },
    enterprise: null,
    is_enterprise_install: false,
    channel: { id: o.channel, name: emu.state.channels.get(o.channel)?.name ?? o.channel },
    message: messageJson(message, emu.baseUrl),
    state: { values: {} },
    // The emulator does not serve this URL; apps answer through chat.postEphemeral here.
    response_url: `${emu.baseUrl}/response/unregistered-${randomUUID()}`,
    actions: [action],
  };
  return { deliveries: emu.delivery.deliver("interactive", payload, o.times), payload };
}
