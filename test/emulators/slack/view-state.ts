import type { Params } from "./http-util.js";
import type { ModalJson } from "./modals.js";

/**
 * What a person enters in a modal, turned into `view.state.values[block_id][action_id]`
 * in the shape Slack reports per element (Bolt's `ViewStateValue`), and the checks Slack's
 * client makes before it lets anyone press Submit (required inputs, lengths, number
 * ranges, email and URL formats). A submission Slack's client would not send throws.
 */

/**
 * One input's entry, by the element's type: a string for text, email, URL and number
 * inputs, dates ("YYYY-MM-DD"), times ("HH:mm"), single selects and radio buttons (the
 * option's value), users / conversations / channels (their id) and rich text; a number for
 * datetimepickers (UNIX seconds); a string array for checkboxes and multi-selects; null
 * leaves the input empty.
 */
export type InputValue = string | number | string[] | null;

/** One input's state in `view.state.values[block][action]` (Bolt's `ViewStateValue`). */
export type InputState = { type: string } & Params;

type Option = { text: Params; value: string };

const isObject = (v: unknown): v is Params => !!v && typeof v === "object" && !Array.isArray(v);

/** Elements that keep state, wherever they sit (input blocks, actions blocks, accessories). */
function statefulElements(view: ModalJson): { block: Params; element: Params }[] {
  const out: { block: Params; element: Params }[] = [];
  for (const block of view.blocks) {
    const candidates =
      block.type === "input"
        ? [block.element]
        : block.type === "actions"
          ? (block.elements as unknown[])
          : block.type === "section"
            ? [block.accessory]
            : [];
    for (const e of candidates ?? []) {
      if (
        isObject(e) &&
        typeof e.action_id === "string" &&
        !["button", "overflow", "image"].includes(String(e.type))
      )
        out.push({ block, element: e });
    }
  }
  return out;
}

function optionsOf(e: Params): Option[] {
  if (Array.isArray(e.option_groups))
    return (e.option_groups as Params[]).flatMap((g) =>
      Array.isArray(g.options) ? (g.options as Option[]) : [],
    );
  return Array.isArray(e.options) ? (e.options as Option[]) : [];
}

const asString = (v: InputValue, what: string): string | null => {
  if (v === null || v === "") return null;
  if (typeof v === "string" || typeof v === "number") return String(v);
  throw new Error(`${what} takes a string, not ${JSON.stringify(v)}`);
};

const asList = (v: InputValue, what: string): string[] => {
  if (v === null) return [];
  if (Array.isArray(v)) return v;
  if (typeof v === "string") return [v];
  throw new Error(`${what} takes an array of strings, not ${JSON.stringify(v)}`);
};

const richText = (text: string) => ({
  type: "rich_text",
  elements: [{ type: "rich_text_section", elements: [{ type: "text", text }] }],
});

/** The state of one element after the person entered `v` in it. */
function entered(e: Params, v: InputValue): InputState {
  const type = String(e.type);
  const what = `the ${type} "${e.action_id}"`;
  const option = (value: string): Option => {
    const found = optionsOf(e).find((o) => o.value === value);
    if (!found && !type.includes("external")) throw new Error(`${what} has no option with value "${value}"`);
    return found ?? { text: { type: "plain_text", text: value, emoji: true }, value };
  };
  switch (type) {
    case "plain_text_input":
    case "email_text_input":
    case "url_text_input":
    case "number_input":
      return { type, value: asString(v, what) };
    case "datepicker":
      return { type, selected_date: asString(v, what) };
    case "timepicker":
      return { type, selected_time: asString(v, what), ...(e.timezone ? { timezone: e.timezone } : {}) };
    case "datetimepicker": {
      if (v !== null && typeof v !== "number") throw new Error(`${what} takes UNIX seconds (a number)`);
      return { type, selected_date_time: v };
    }
    case "checkboxes":
    case "multi_static_select":
    case "multi_external_select":
      return { type, selected_options: asList(v, what).map(option) };
    case "radio_buttons":
    case "static_select":
    case "external_select": {
      const value = asString(v, what);
      return { type, selected_option: value === null ? null : option(value) };
    }
    case "users_select":
      return { type, selected_user: asString(v, what) };
    case "multi_users_select":
      return { type, selected_users: asList(v, what) };
    case "conversations_select":
      return { type, selected_conversation: asString(v, what) };
    case "multi_conversations_select":
      return { type, selected_conversations: asList(v, what) };
    case "channels_select":
      return { type, selected_channel: asString(v, what) };
    case "multi_channels_select":
      return { type, selected_channels: asList(v, what) };
    case "rich_text_input": {
      const text = asString(v, what);
      return { type, rich_text_value: richText(text ?? "") };
    }
    case "file_input":
      return { type, files: [] };
    default:
      throw new Error(`${what} keeps no state`);
  }
}

/** The state of an element nobody touched: its initial value, as Slack pre-fills it. */
function initial(e: Params): InputState {
  const type = String(e.type);
  const state = entered(e, null);
  if (typeof e.initial_value === "string") state.value = e.initial_value;
  if (isObject(e.initial_value) && type === "rich_text_input") state.rich_text_value = e.initial_value;
  if (e.initial_date !== undefined) state.selected_date = e.initial_date;
  if (e.initial_time !== undefined) state.selected_time = e.initial_time;
  if (e.initial_date_time !== undefined) state.selected_date_time = e.initial_date_time;
  if (e.initial_option !== undefined) state.selected_option = e.initial_option;
  if (e.initial_options !== undefined) state.selected_options = e.initial_options;
  if (e.initial_user !== undefined) state.selected_user = e.initial_user;
  if (e.initial_users !== undefined) state.selected_users = e.initial_users;
  if (e.initial_conversation !== undefined) state.selected_conversation = e.initial_conversation;
  if (e.initial_conversations !== undefined) state.selected_conversations = e.initial_conversations;
  if (e.initial_channel !== undefined) state.selected_channel = e.initial_channel;
  if (e.initial_channels !== undefined) state.selected_channels = e.initial_channels;
  return state;
}

function isEmpty(s: Params): boolean {
  const { type: _type, timezone: _tz, ...rest } = s;
  return Object.values(rest).every(
    (v) =>
      v === null ||
      v === "" ||
      (Array.isArray(v) && v.length === 0) ||
      (isObject(v) && JSON.stringify(v) === JSON.stringify(richText(""))),
  );
}

/** What Slack's client refuses before sending: the reason, or undefined. */
function refusal(e: Params, s: Params): string | undefined {
  const value = typeof s.value === "string" ? s.value : undefined;
  if (e.type === "plain_text_input" && value !== undefined) {
    if (typeof e.min_length === "number" && value.length < e.min_length)
      return `needs at least ${e.min_length} characters`;
    if (value.length > (typeof e.max_length === "number" ? e.max_length : 3000))
      return `takes at most ${e.max_length ?? 3000} characters`;
  }
  if (e.type === "email_text_input" && value !== undefined && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(value))
    return "is not an email address";
  if (e.type === "url_text_input" && value !== undefined && !/^https?:\/\/\S+$/.test(value))
    return "is not a URL";
  if (e.type === "number_input" && value !== undefined) {
    const n = Number(value);
    if (value.trim() === "" || !Number.isFinite(n)) return "is not a number";
    if (e.is_decimal_allowed !== true && !Number.isInteger(n)) return "takes whole numbers only";
    if (typeof e.min_value === "string" && n < Number(e.min_value)) return `takes ${e.min_value} or more`;
    if (typeof e.max_value === "string" && n > Number(e.max_value)) return `takes ${e.max_value} or less`;
  }
  if (
    e.type === "datepicker" &&
    typeof s.selected_date === "string" &&
    !/^\d{4}-\d{2}-\d{2}$/.test(s.selected_date)
  )
    return "is not a date (YYYY-MM-DD)";
  if (
    e.type === "timepicker" &&
    typeof s.selected_time === "string" &&
    !/^\d{2}:\d{2}$/.test(s.selected_time)
  )
    return "is not a time (HH:mm)";
  const many = [s.selected_options, s.selected_users, s.selected_conversations, s.selected_channels].find(
    Array.isArray,
  );
  if (many && typeof e.max_selected_items === "number" && many.length > e.max_selected_items)
    return `takes at most ${e.max_selected_items} choices`;
  return undefined;
}

/**
 * `view.state.values` after `user` entered `inputs` (by action_id) in `view`: untouched
 * elements keep what the view holds (what was entered before, or the initial value);
 * `raw` (block_id -> action_id -> state) replaces whole entries. Throws what Slack's client
 * would show instead of submitting.
 */
export function submittedState(
  view: ModalJson,
  inputs: Record<string, InputValue>,
  raw: Record<string, Record<string, InputState>> = {},
): Record<string, Record<string, InputState>> {
  const elements = statefulElements(view);
  const values: Record<string, Record<string, InputState>> = {};
  const used = new Set<string>();
  for (const { block, element } of elements) {
    const blockId = String(block.block_id);
    const action = String(element.action_id);
    const before = view.state.values[blockId]?.[action] as InputState | undefined;
    let state = before ?? initial(element);
    if (Object.hasOwn(inputs, action)) {
      if (used.has(action))
        throw new Error(
          `action_id "${action}" is in more than one block; pass its state in \`values\` instead`,
        );
      used.add(action);
      state = entered(element, inputs[action] ?? null);
    }
    const override = raw[blockId]?.[action];
    if (override) state = override;
    values[blockId] = { ...values[blockId], [action]: state };
  }
  const unknown = Object.keys(inputs).filter((a) => !used.has(a));
  if (unknown.length) throw new Error(`the view has no input with action_id ${unknown.join(", ")}`);
  for (const [blockId, actions] of Object.entries(raw)) {
    for (const action of Object.keys(actions)) {
      if (!values[blockId]?.[action]) throw new Error(`the view has no element ${blockId}/${action}`);
    }
  }
  for (const { block, element } of elements) {
    const state = values[String(block.block_id)]?.[String(element.action_id)];
    if (!state) continue;
    const label = (block.label as { text?: string } | undefined)?.text ?? String(element.action_id);
    if (block.type === "input" && block.optional !== true && isEmpty(state))
      throw new Error(`"${label}" is required`);
    const why = isEmpty(state) ? undefined : refusal(element, state);
    if (why) throw new Error(`"${label}" ${why}`);
  }
  return values;
}

/** An input block for a made-up view (submitView without an open one) from the state it reports. */
export function inputBlockFor(blockId: string, action: string, state: InputState): Params {
  const element: Params = { type: state.type, action_id: action };
  if (isObject(state.selected_option)) element.options = [state.selected_option];
  if (Array.isArray(state.selected_options)) element.options = state.selected_options;
  return {
    type: "input",
    block_id: blockId,
    optional: true,
    label: { type: "plain_text", text: action, emoji: true },
    element,
  };
}

/** The entries of `values` whose block and action the new blocks still have (views.update keeps them). */
export function keptState(
  values: ModalJson["state"]["values"],
  blocks: Params[],
): ModalJson["state"]["values"] {
  const kept: ModalJson["state"]["values"] = {};
  for (const block of blocks) {
    const id = String(block.block_id);
    const element = block.element as Params | undefined;
    const action = element?.action_id;
    const state = typeof action === "string" ? values[id]?.[action] : undefined;
    if (state && state.type === element?.type) kept[id] = { [action as string]: state };
  }
  return kept;
}
