import { randomUUID } from "node:crypto";
import type { Delivery } from "./delivery.js";
import type { Params } from "./http-util.js";
import type { SlackEmulator } from "./index.js";
import { APP_ID, BOT_ID, messageJson, TEAM_ID } from "./state.js";

/**
 * Interactive payloads (`block_actions`, `view_submission`) in the shapes Slack sends them
 * (docs.slack.dev "block_actions payload" / "view_submission payload", and Bolt's
 * `BlockAction` / `ViewSubmitAction` types). Delivered like slash commands: not retried, and
 * without an ack within the deadline the person sees an error (`delivery.failed`).
 */

/** Slack's `trigger_id`: "<number>.<number>.<hex>". */
function triggerId(): string {
  return `${Date.now()}.${Math.floor(Math.random() * 1e9)}.${randomUUID().replace(/-/g, "")}`;
}

function actionTs(): string {
  const now = Date.now();
  return `${Math.floor(now / 1000)}.${String(now % 1000).padStart(3, "0")}${String(Math.floor(Math.random() * 1000)).padStart(3, "0")}`;
}

function userJson(emu: SlackEmulator, user: string): Params {
  const info = emu.state.user(user);
  return { id: info.id, username: info.name, name: info.name, team_id: TEAM_ID };
}

export interface ClickOptions {
  user: string;
  channel: string;
  /** The message holding the button (it must exist in the emulator). */
  messageTs: string;
  actionId: string;
  /** A button's `value`; omitted for buttons without one. */
  value?: string;
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
    user: userJson(emu, o.user),
    api_app_id: APP_ID,
    token: "verification-token",
    container: {
      type: "message",
      message_ts: message.ts,
      channel_id: o.channel,
      is_ephemeral: false,
      ...(message.thread_ts ? { thread_ts: message.thread_ts } : {}),
    },
    trigger_id: triggerId(),
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

/** One input's state in `view.state.values[block][action]`. */
export type InputState =
  | { type: "plain_text_input"; value: string | null }
  | { type: "static_select"; selected_option: { text: Params; value: string } | null };

export interface SubmitOptions {
  user: string;
  callbackId: string;
  /** block_id -> action_id -> state, as Slack reports the modal's inputs. */
  values: Record<string, Record<string, InputState>>;
  privateMetadata?: string;
  times?: number;
}

/** A person presses Submit in a modal: a `view_submission` payload. */
export function submitView(
  emu: SlackEmulator,
  o: SubmitOptions,
): { deliveries: Delivery[]; payload: Params } {
  const viewId = `V${randomUUID().replace(/-/g, "").slice(0, 10).toUpperCase()}`;
  const payload: Params = {
    type: "view_submission",
    team: { id: TEAM_ID, domain: "emulator" },
    user: userJson(emu, o.user),
    api_app_id: APP_ID,
    token: "verification-token",
    trigger_id: triggerId(),
    view: {
      id: viewId,
      team_id: TEAM_ID,
      type: "modal",
      blocks: [],
      private_metadata: o.privateMetadata ?? "",
      callback_id: o.callbackId,
      state: { values: o.values },
      hash: `${Math.floor(Date.now() / 1000)}.${randomUUID().slice(0, 8)}`,
      title: { type: "plain_text", text: "Form", emoji: true },
      clear_on_close: false,
      notify_on_close: false,
      close: { type: "plain_text", text: "Cancel", emoji: true },
      submit: { type: "plain_text", text: "Submit", emoji: true },
      previous_view_id: null,
      root_view_id: viewId,
      app_id: APP_ID,
      external_id: "",
      app_installed_team_id: TEAM_ID,
      bot_id: BOT_ID,
    },
    response_urls: [],
    is_enterprise_install: false,
    enterprise: null,
  };
  return { deliveries: emu.delivery.deliver("interactive", payload, o.times), payload };
}
