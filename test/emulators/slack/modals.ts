import { randomUUID } from "node:crypto";
import type { Params } from "./http-util.js";
import { APP_ID, BOT_ID, TEAM_ID } from "./state.js";
import { plainTextJson, storedBlocks, viewProblems } from "./view-schema.js";
import { keptState } from "./view-state.js";
import { fail } from "./web-api-context.js";

/**
 * Modals as Slack keeps them: trigger ids handed out with interactions (single use, valid
 * for 3 s), and per person a stack of open views (views.open starts it, views.push and
 * `response_action: "push"` add to it, up to 3; a plain view_submission ack closes the top).
 */

/** Where a trigger_id was handed out. */
export type TriggerSource = "block_actions" | "view_submission" | "slash_command";

export interface EmuTrigger {
  id: string;
  user: string;
  source: TriggerSource;
  issuedAt: number;
  /** When views.open / views.push used it: a trigger is single use (`exchanged_trigger_id`). */
  exchangedAt?: number;
}

export interface PlainTextJson {
  type: "plain_text";
  text: string;
  emoji?: boolean;
}

/** A modal as Slack returns it (views.open / update / push) and sends it (view_submission). */
export interface ModalJson {
  id: string;
  team_id: string;
  type: "modal";
  title: PlainTextJson;
  submit: PlainTextJson | null;
  close: PlainTextJson | null;
  blocks: Params[];
  private_metadata: string;
  callback_id: string;
  external_id: string;
  state: { values: Record<string, Record<string, Params>> };
  hash: string;
  clear_on_close: boolean;
  notify_on_close: boolean;
  previous_view_id: string | null;
  root_view_id: string;
  app_id: string;
  app_installed_team_id: string;
  bot_id: string;
}

/** One modal view a person has (or had) open. */
export interface EmuView {
  id: string;
  user: string;
  /** What the person sees now, in Slack's shape. */
  view: ModalJson;
  /** block_id -> message, from the app's last `response_action: "errors"`; cleared when the view changes. */
  errors: Record<string, string>;
  /**
   * Slack's own error under the Submit button after the last submission failed: the app
   * did not ack in time (`operation_timeout`) or acked with a response Slack refused
   * (`invalid_response_action`, `invalid_arguments` for a broken view).
   */
  submitError?: string;
  open: boolean;
  /** Every earlier version of the view (views.update, `response_action: "update"`), oldest first. */
  versions: ModalJson[];
}

/** The part of the emulator's state that holds modals. */
export interface ModalState {
  readonly triggers: Map<string, EmuTrigger>;
  /** user -> the views they have open, the root first and the one they see last. */
  readonly views: Map<string, EmuView[]>;
  /** Every view ever opened, closed ones too. */
  readonly viewsById: Map<string, EmuView>;
}

/** Slack allows three views in a modal's stack (`push_limit_reached`). */
export const VIEW_STACK_LIMIT = 3;

/** Slack's `trigger_id` format: "<number>.<number>.<hex>". */
export function issueTrigger(state: ModalState, user: string, source: TriggerSource): string {
  const id = `${Date.now()}.${Math.floor(Math.random() * 1e9)}.${randomUUID().replace(/-/g, "")}`;
  state.triggers.set(id, { id, user, source, issuedAt: Date.now() });
  return id;
}

/** The trigger views.open / push name, if it can still be used; refused like Slack otherwise. */
export function usableTrigger(state: ModalState, id: string | undefined, ttlMs: number): EmuTrigger {
  const trigger = id ? state.triggers.get(id) : undefined;
  if (!trigger) return fail("invalid_trigger_id");
  if (trigger.exchangedAt !== undefined) fail("exchanged_trigger_id");
  if (Date.now() - trigger.issuedAt > ttlMs) fail("expired_trigger_id");
  return trigger;
}

const viewId = () => `V${randomUUID().replace(/-/g, "").slice(0, 10).toUpperCase()}`;
const viewHash = () => `${Math.floor(Date.now() / 1000)}.${randomUUID().replace(/-/g, "").slice(0, 8)}`;

/** Refuses a broken view with Slack's `invalid_arguments` and its messages. */
export function checkView(view: unknown, pointer = "/view"): Params {
  const problems = viewProblems(view, pointer);
  if (problems.length) fail("invalid_arguments", { response_metadata: { messages: problems } });
  return view as Params;
}

function modalJson(input: Params, id: string, root: string, previous: string | null): ModalJson {
  return {
    id,
    team_id: TEAM_ID,
    type: "modal",
    title: plainTextJson(input.title) as unknown as PlainTextJson,
    submit: plainTextJson(input.submit) as PlainTextJson | null,
    close: plainTextJson(input.close) as PlainTextJson | null,
    blocks: storedBlocks(input.blocks as Params[]),
    private_metadata: typeof input.private_metadata === "string" ? input.private_metadata : "",
    callback_id: typeof input.callback_id === "string" ? input.callback_id : "",
    external_id: typeof input.external_id === "string" ? input.external_id : "",
    state: { values: {} },
    hash: viewHash(),
    clear_on_close: input.clear_on_close === true,
    notify_on_close: input.notify_on_close === true,
    previous_view_id: previous,
    root_view_id: root,
    app_id: APP_ID,
    app_installed_team_id: TEAM_ID,
    bot_id: BOT_ID,
  };
}

function refuseDuplicateExternalId(state: ModalState, input: Params, except?: string): void {
  const external = input.external_id;
  if (typeof external !== "string" || external === "") return;
  for (const v of state.viewsById.values()) {
    if (v.open && v.id !== except && v.view.external_id === external) fail("duplicate_external_id");
  }
}

export function closeViews(state: ModalState, user: string, count = Number.POSITIVE_INFINITY): void {
  const stack = state.views.get(user) ?? [];
  while (stack.length > 0 && count-- > 0) {
    const top = stack.pop();
    if (top) top.open = false;
  }
  if (stack.length === 0) state.views.delete(user);
}

/** views.open: a new modal for `user`, replacing any they had open. */
export function openModal(state: ModalState, user: string, input: Params): EmuView {
  refuseDuplicateExternalId(state, input);
  closeViews(state, user);
  const id = viewId();
  const view: EmuView = {
    id,
    user,
    view: modalJson(input, id, id, null),
    errors: {},
    open: true,
    versions: [],
  };
  state.views.set(user, [view]);
  state.viewsById.set(id, view);
  return view;
}

/** views.push / `response_action: "push"`: a view on top of the user's open modal. */
export function pushModal(state: ModalState, user: string, input: Params): EmuView {
  const stack = state.views.get(user);
  const top = stack?.at(-1);
  if (!stack || !top) return fail("not_found");
  if (stack.length >= VIEW_STACK_LIMIT) fail("push_limit_reached");
  refuseDuplicateExternalId(state, input);
  const id = viewId();
  const json = modalJson(input, id, top.view.root_view_id, top.id);
  const view: EmuView = { id, user, view: json, errors: {}, open: true, versions: [] };
  stack.push(view);
  state.viewsById.set(id, view);
  return view;
}

/**
 * views.update / `response_action: "update"`: the view keeps its id and place, gets a new
 * hash, and keeps what the person entered in inputs whose block_id and action_id it still has.
 */
export function updateModal(state: ModalState, target: EmuView, input: Params): EmuView {
  refuseDuplicateExternalId(state, input, target.id);
  target.versions.push(target.view);
  const previous = target.view;
  target.view = modalJson(input, target.id, previous.root_view_id, previous.previous_view_id);
  target.view.state.values = keptState(previous.state.values, target.view.blocks);
  target.errors = {};
  target.submitError = undefined;
  return target;
}

/** The open view views.update names by `view_id` or `external_id`. */
export function findOpenView(state: ModalState, p: Params): EmuView {
  const id = typeof p.view_id === "string" && p.view_id !== "" ? p.view_id : undefined;
  const external = typeof p.external_id === "string" && p.external_id !== "" ? p.external_id : undefined;
  if (!id && !external) {
    fail("invalid_arguments", {
      response_metadata: { messages: ["[ERROR] missing required field: view_id or external_id"] },
    });
  }
  const found = id
    ? state.viewsById.get(id)
    : [...state.viewsById.values()].find((v) => v.open && v.view.external_id === external);
  if (!found?.open) return fail("not_found");
  return found;
}
