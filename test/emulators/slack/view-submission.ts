import type { Delivery } from "./delivery.js";
import { interactiveUser } from "./events.js";
import type { Params } from "./http-util.js";
import type { SlackEmulator } from "./index.js";
import {
  checkView,
  closeViews,
  type EmuView,
  issueTrigger,
  type ModalJson,
  pushModal,
  updateModal,
} from "./modals.js";
import { APP_ID, BOT_ID, TEAM_ID } from "./state.js";
import { type InputState, type InputValue, inputBlockFor, submittedState } from "./view-state.js";
import { ApiError } from "./web-api-context.js";

export interface SubmitOptions {
  user: string;
  /**
   * What the person entered, by action_id (see `InputValue`); inputs left out keep what the
   * view holds. Needs a view the user has open (views.open), which is what is submitted.
   */
  inputs?: Record<string, InputValue>;
  /** block_id -> action_id -> state, as Slack reports it: replaces what `inputs` built. */
  values?: Record<string, Record<string, InputState>>;
  /**
   * Without an open view, a made-up one with this callback_id, `values` and `privateMetadata`
   * is opened and submitted (for apps tested without views.open). With one, it must match.
   */
  callbackId?: string;
  privateMetadata?: string;
  times?: number;
}

/** What became of a submission once the app acked it (or did not). */
export type SubmitOutcome =
  /** A plain ack: the view the person submitted closed (the one under it shows again). */
  | { action: "closed" }
  /** `response_action: "clear"`: every view of the modal closed. */
  | { action: "cleared" }
  | { action: "updated"; view: EmuView }
  | { action: "pushed"; view: EmuView }
  /** `response_action: "errors"`: the view stays open with these under its inputs. */
  | { action: "errors"; errors: Record<string, string> }
  /**
   * The view stays open and the person sees Slack's error: no ack in time
   * (`operation_timeout`), or a response Slack refused (`invalid_response_action`,
   * `invalid_arguments` / `push_limit_reached` for a view it could not show).
   */
  | { action: "failed"; error: string; messages?: string[] };

export interface SubmitHandle {
  deliveries: Delivery[];
  payload: Params;
  /** The view submitted, as the emulator keeps it (its `errors`, `open`, `submitError`). */
  view: EmuView;
  /** Settles once the (first) delivery is acked or Slack gave up on it. */
  outcome: Promise<SubmitOutcome>;
}

const isObject = (v: unknown): v is Params => !!v && typeof v === "object" && !Array.isArray(v);

/** A view made up from `values` and opened for `user`, for submissions without views.open. */
function madeUpView(emu: SlackEmulator, o: SubmitOptions): EmuView {
  if (o.callbackId === undefined)
    throw new Error(`emulator: ${o.user} has no modal open; open one with views.open or pass callbackId`);
  if (o.inputs) throw new Error(`emulator: ${o.user} has no modal open; \`inputs\` needs one (views.open)`);
  const id = `V${Math.random().toString(36).slice(2, 12).toUpperCase()}`;
  const blocks = Object.entries(o.values ?? {}).flatMap(([blockId, actions]) =>
    Object.entries(actions).map(([action, state]) => inputBlockFor(blockId, action, state)),
  );
  const view: ModalJson = {
    id,
    team_id: TEAM_ID,
    type: "modal",
    title: { type: "plain_text", text: "Form", emoji: true },
    submit: { type: "plain_text", text: "Submit", emoji: true },
    close: { type: "plain_text", text: "Cancel", emoji: true },
    blocks,
    private_metadata: o.privateMetadata ?? "",
    callback_id: o.callbackId,
    external_id: "",
    state: { values: {} },
    hash: `${Math.floor(Date.now() / 1000)}.${Math.random().toString(16).slice(2, 10)}`,
    clear_on_close: false,
    notify_on_close: false,
    previous_view_id: null,
    root_view_id: id,
    app_id: APP_ID,
    app_installed_team_id: TEAM_ID,
    bot_id: BOT_ID,
  };
  const emuView: EmuView = { id, user: o.user, view, errors: {}, open: true, versions: [] };
  emu.state.views.set(o.user, [emuView]);
  emu.state.viewsById.set(id, emuView);
  return emuView;
}

/**
 * A person presses Submit in the modal they see: a `view_submission` payload with the
 * view's callback_id, private_metadata, blocks and the state of its inputs. Throws when
 * Slack's client would not send it (no Submit button, a required input empty, a value
 * out of the element's bounds). The ack decides what the person sees next (`outcome`).
 */
export function submitView(emu: SlackEmulator, o: SubmitOptions): SubmitHandle {
  const view = emu.state.openView(o.user) ?? madeUpView(emu, o);
  const json = view.view;
  if (o.callbackId !== undefined && o.callbackId !== json.callback_id)
    throw new Error(
      `emulator: ${o.user}'s open view has callback_id "${json.callback_id}", not "${o.callbackId}"`,
    );
  if (o.privateMetadata !== undefined && o.privateMetadata !== json.private_metadata)
    throw new Error(`emulator: ${o.user}'s open view has other private_metadata`);
  if (!json.submit) throw new Error(`emulator: the view "${json.title.text}" has no Submit button`);
  let values: ModalJson["state"]["values"];
  try {
    values = submittedState(json, o.inputs ?? {}, o.values);
  } catch (err) {
    throw new Error(
      `emulator: Slack would not let ${o.user} submit "${json.title.text}": ${(err as Error).message}`,
    );
  }
  // What the person entered stays in the form, whatever the app answers.
  json.state = { values };
  const payload: Params = {
    type: "view_submission",
    team: { id: TEAM_ID, domain: "emulator" },
    user: interactiveUser(emu.state, o.user),
    api_app_id: APP_ID,
    token: "verification-token",
    trigger_id: issueTrigger(emu.state, o.user, "view_submission"),
    view: structuredClone(json),
    response_urls: [],
    is_enterprise_install: false,
    enterprise: null,
  };
  const deliveries = emu.delivery.deliver("interactive", payload, o.times);
  const first = deliveries[0];
  if (!first) throw new Error("emulator: no delivery");
  const outcome = first.done.then(() => settle(emu, view, first));
  return { deliveries, payload, view, outcome };
}

/** Applies the app's ack to the view, as Slack does. */
function settle(emu: SlackEmulator, view: EmuView, delivery: Delivery): SubmitOutcome {
  const failed = (error: string, messages?: string[]): SubmitOutcome => {
    view.submitError = error;
    return { action: "failed", error, ...(messages ? { messages } : {}) };
  };
  // Not acked: in time (operation_timeout), or at all before the emulator stopped.
  if (delivery.failed || !delivery.acked) return failed(delivery.failed ?? "operation_timeout");
  const ack = delivery.ackPayload;
  if (ack !== undefined && ack !== "" && !isObject(ack)) return failed("invalid_response_action");
  view.submitError = undefined;
  const body: Params = isObject(ack) ? ack : {};
  const action = body.response_action;
  try {
    switch (action) {
      case undefined:
        closeViews(emu.state, view.user, 1);
        return { action: "closed" };
      case "clear":
        closeViews(emu.state, view.user);
        return { action: "cleared" };
      case "update":
        return { action: "updated", view: updateModal(emu.state, view, checkView(body.view)) };
      case "push":
        return { action: "pushed", view: pushModal(emu.state, view.user, checkView(body.view)) };
      case "errors":
        return fieldErrors(view, body.errors) ?? failed("invalid_response_action");
      default:
        return failed("invalid_response_action");
    }
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    const messages = (err.extra.response_metadata as { messages?: string[] } | undefined)?.messages;
    return failed(err.message, messages);
  }
}

/**
 * `errors` as Slack takes them: an object of non-empty messages keyed by block ids of the
 * view's input blocks. Anything else and Slack shows its own error instead (undefined).
 */
function fieldErrors(view: EmuView, errors: unknown): SubmitOutcome | undefined {
  if (!isObject(errors) || Object.keys(errors).length === 0) return undefined;
  const inputs = new Set(view.view.blocks.filter((b) => b.type === "input").map((b) => b.block_id));
  for (const [blockId, message] of Object.entries(errors)) {
    if (!inputs.has(blockId) || typeof message !== "string" || message === "") return undefined;
  }
  view.errors = errors as Record<string, string>;
  return { action: "errors", errors: view.errors };
}
