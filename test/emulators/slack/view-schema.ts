import type { Params } from "./http-util.js";

/**
 * Block Kit's rules for a modal view, as views.open / update / push and a view_submission's
 * `response_action: "update" | "push"` apply them (docs.slack.dev "Modal view object",
 * "Input block", the element pages; @slack/types' `ModalView`). A broken view is refused
 * with `invalid_arguments` and one message per problem in `response_metadata.messages`,
 * in Slack's format: `[ERROR] must be less than 25 characters [json-pointer:/view/title/text]`.
 */

/** Elements an input block takes, and the state each reports in `view.state.values`. */
export const INPUT_ELEMENTS = new Set([
  "plain_text_input",
  "email_text_input",
  "url_text_input",
  "number_input",
  "datepicker",
  "datetimepicker",
  "timepicker",
  "checkboxes",
  "radio_buttons",
  "static_select",
  "multi_static_select",
  "external_select",
  "multi_external_select",
  "users_select",
  "multi_users_select",
  "conversations_select",
  "multi_conversations_select",
  "channels_select",
  "multi_channels_select",
  "rich_text_input",
  "file_input",
]);

/** Elements of `actions` blocks and section accessories: no text inputs there, buttons and the like instead. */
const ACTION_ELEMENTS = new Set([
  ...[...INPUT_ELEMENTS].filter((t) => !/_input$/.test(t)),
  "button",
  "overflow",
  "image",
]);

/** Blocks a modal may hold (`markdown`, `context_actions` and `file` are for messages only). */
export const MODAL_BLOCKS = new Set([
  "actions",
  "context",
  "divider",
  "header",
  "image",
  "input",
  "rich_text",
  "section",
  "video",
]);

/** Option limits per element: Slack's element pages. */
const MAX_OPTIONS: Record<string, number> = {
  static_select: 100,
  multi_static_select: 100,
  checkboxes: 10,
  radio_buttons: 10,
  overflow: 5,
};

export const isObject = (v: unknown): v is Params => !!v && typeof v === "object" && !Array.isArray(v);

export class Issues {
  readonly messages: string[] = [];
  add(pointer: string, message: string): void {
    this.messages.push(`[ERROR] ${message} [json-pointer:${pointer}]`);
  }
}

/** Slack names the missing field and points at the object that lacks it. */
function missing(issues: Issues, pointer: string): void {
  const at = pointer.lastIndexOf("/");
  issues.add(pointer.slice(0, at) || "/", `missing required field: ${pointer.slice(at + 1)}`);
}

export function stringField(
  issues: Issues,
  v: unknown,
  pointer: string,
  max: number,
  required = false,
): void {
  if (v === undefined || v === null) {
    if (required) missing(issues, pointer);
    return;
  }
  if (typeof v !== "string") {
    issues.add(pointer, "must be a string");
    return;
  }
  if (required && v.length === 0) issues.add(pointer, "must be more than 0 characters");
  if (v.length > max) issues.add(pointer, `must be less than ${max + 1} characters`);
}

/** A text object: `plain_text` only, or `mrkdwn` too when `mrkdwn` is allowed. */
function textObject(
  issues: Issues,
  v: unknown,
  pointer: string,
  max: number,
  o: { required?: boolean; mrkdwn?: boolean } = {},
): void {
  if (v === undefined || v === null) {
    if (o.required) missing(issues, pointer);
    return;
  }
  if (!isObject(v)) {
    issues.add(pointer, "must provide an object");
    return;
  }
  const types = o.mrkdwn ? ["plain_text", "mrkdwn"] : ["plain_text"];
  if (!types.includes(String(v.type))) issues.add(`${pointer}/type`, `must be one of: ${types.join(", ")}`);
  stringField(issues, v.text, `${pointer}/text`, max, true);
}

type Option = { text?: { text?: string }; value?: string };

function options(issues: Issues, e: Params, pointer: string): Option[] {
  const type = String(e.type);
  const mrkdwn = type === "checkboxes" || type === "radio_buttons";
  const max = MAX_OPTIONS[type] ?? 100;
  const all: Option[] = [];
  const list = (v: unknown, at: string, limit: number) => {
    if (!Array.isArray(v)) {
      issues.add(at, "must provide an array");
      return;
    }
    if (v.length === 0) issues.add(at, "must provide at least 1 item");
    if (v.length > limit) issues.add(at, `no more than ${limit} items allowed`);
    v.forEach((o, i) => {
      const p = `${at}/${i}`;
      if (!isObject(o)) {
        issues.add(p, "must provide an object");
        return;
      }
      textObject(issues, o.text, `${p}/text`, 75, { required: true, mrkdwn });
      stringField(issues, o.value, `${p}/value`, 150, true);
      textObject(issues, o.description, `${p}/description`, 75, { mrkdwn });
      all.push(o as Option);
    });
  };
  const groups = type.endsWith("static_select") ? e.option_groups : undefined;
  if (groups !== undefined) {
    if (e.options !== undefined)
      issues.add(pointer, "must provide either options or option_groups, not both");
    if (!Array.isArray(groups)) issues.add(`${pointer}/option_groups`, "must provide an array");
    else {
      if (groups.length > 100) issues.add(`${pointer}/option_groups`, "no more than 100 items allowed");
      groups.forEach((g, i) => {
        const p = `${pointer}/option_groups/${i}`;
        if (!isObject(g)) {
          issues.add(p, "must provide an object");
          return;
        }
        textObject(issues, g.label, `${p}/label`, 75, { required: true });
        list(g.options, `${p}/options`, 100);
      });
    }
  } else list(e.options, `${pointer}/options`, max);
  return all;
}

const sameOption = (a: unknown, b: Option) =>
  isObject(a) && a.value === b.value && (a.text as Option["text"])?.text === b.text?.text;

/** `initial_option(s)` must be options of the element, text and value alike. */
function initialOptions(issues: Issues, e: Params, all: Option[], pointer: string): void {
  if (e.initial_option !== undefined && !all.some((o) => sameOption(e.initial_option, o)))
    issues.add(`${pointer}/initial_option`, "must match one of the provided options");
  if (e.initial_options !== undefined) {
    if (!Array.isArray(e.initial_options)) issues.add(`${pointer}/initial_options`, "must provide an array");
    else
      e.initial_options.forEach((io, i) => {
        if (!all.some((o) => sameOption(io, o)))
          issues.add(`${pointer}/initial_options/${i}`, "must match one of the provided options");
      });
  }
}

const intIn = (v: unknown, min: number, max: number) =>
  typeof v === "number" && Number.isInteger(v) && v >= min && v <= max;

function numberInput(issues: Issues, e: Params, pointer: string): void {
  if (typeof e.is_decimal_allowed !== "boolean") missing(issues, `${pointer}/is_decimal_allowed`);
  const numbers: Record<string, number> = {};
  for (const key of ["initial_value", "min_value", "max_value"]) {
    const v = e[key];
    if (v === undefined) continue;
    // Slack takes these as strings ("5", "2.5"), not as JSON numbers.
    if (typeof v !== "string" || v.trim() === "" || !Number.isFinite(Number(v))) {
      issues.add(`${pointer}/${key}`, "must be a string holding a number");
      continue;
    }
    if (e.is_decimal_allowed !== true && !Number.isInteger(Number(v)))
      issues.add(`${pointer}/${key}`, "must be an integer when is_decimal_allowed is false");
    numbers[key] = Number(v);
  }
  const { min_value: min, max_value: max, initial_value: initial } = numbers;
  if (min !== undefined && max !== undefined && min > max)
    issues.add(`${pointer}/min_value`, "must be less than or equal to max_value");
  if (initial !== undefined && ((min !== undefined && initial < min) || (max !== undefined && initial > max)))
    issues.add(`${pointer}/initial_value`, "must be between min_value and max_value");
}

function plainTextInput(issues: Issues, e: Params, pointer: string): void {
  if (e.min_length !== undefined && !intIn(e.min_length, 0, 3000))
    issues.add(`${pointer}/min_length`, "must be an integer from 0 to 3000");
  if (e.max_length !== undefined && !intIn(e.max_length, 0, 3000))
    issues.add(`${pointer}/max_length`, "must be an integer from 0 to 3000");
  if (typeof e.min_length === "number" && typeof e.max_length === "number" && e.min_length > e.max_length)
    issues.add(`${pointer}/min_length`, "must be less than or equal to max_length");
  if (e.initial_value !== undefined) {
    const max = typeof e.max_length === "number" ? e.max_length : 3000;
    stringField(issues, e.initial_value, `${pointer}/initial_value`, max);
  }
  if (e.multiline !== undefined && typeof e.multiline !== "boolean")
    issues.add(`${pointer}/multiline`, "must be a boolean");
}

function element(issues: Issues, e: unknown, pointer: string, allowed: Set<string>): void {
  if (!isObject(e)) {
    issues.add(pointer, "must provide an object");
    return;
  }
  const type = String(e.type);
  if (!allowed.has(type)) {
    issues.add(`${pointer}/type`, `unsupported element type: ${type}`);
    return;
  }
  stringField(issues, e.action_id, `${pointer}/action_id`, 255);
  if (type !== "button" && type !== "image") textObject(issues, e.placeholder, `${pointer}/placeholder`, 150);
  if (type === "plain_text_input") plainTextInput(issues, e, pointer);
  if (type === "number_input") numberInput(issues, e, pointer);
  if (type in MAX_OPTIONS) initialOptions(issues, e, options(issues, e, pointer), pointer);
  if (type.startsWith("multi_") && e.max_selected_items !== undefined && !intIn(e.max_selected_items, 1, 1e6))
    issues.add(`${pointer}/max_selected_items`, "must be an integer of at least 1");
  if (
    type === "datepicker" &&
    e.initial_date !== undefined &&
    !/^\d{4}-\d{2}-\d{2}$/.test(String(e.initial_date))
  )
    issues.add(`${pointer}/initial_date`, "must be a date in the format YYYY-MM-DD");
  if (type === "timepicker" && e.initial_time !== undefined && !/^\d{2}:\d{2}$/.test(String(e.initial_time)))
    issues.add(`${pointer}/initial_time`, "must be a time in the format HH:mm");
  if (type === "datetimepicker" && e.initial_date_time !== undefined && !intIn(e.initial_date_time, 0, 1e11))
    issues.add(`${pointer}/initial_date_time`, "must be a UNIX timestamp in seconds");
  if (type === "button") {
    textObject(issues, e.text, `${pointer}/text`, 75, { required: true });
    stringField(issues, e.value, `${pointer}/value`, 2000);
    stringField(issues, e.url, `${pointer}/url`, 3000);
  }
  if (type === "image") stringField(issues, e.alt_text, `${pointer}/alt_text`, 2000, true);
}

/** The rules of one block that modals and messages share (section text, actions, buttons…). */
export function block(issues: Issues, b: Params, pointer: string): void {
  const type = String(b.type);
  switch (type) {
    case "input":
      textObject(issues, b.label, `${pointer}/label`, 2000, { required: true });
      textObject(issues, b.hint, `${pointer}/hint`, 2000);
      if (b.element === undefined) missing(issues, `${pointer}/element`);
      else element(issues, b.element, `${pointer}/element`, INPUT_ELEMENTS);
      break;
    case "section":
      if (b.text === undefined && b.fields === undefined)
        issues.add(pointer, "must provide at least one of: text, fields");
      textObject(issues, b.text, `${pointer}/text`, 3000, { mrkdwn: true });
      if (b.fields !== undefined) {
        if (!Array.isArray(b.fields)) issues.add(`${pointer}/fields`, "must provide an array");
        else {
          if (b.fields.length > 10) issues.add(`${pointer}/fields`, "no more than 10 items allowed");
          b.fields.forEach((f, i) => {
            textObject(issues, f, `${pointer}/fields/${i}`, 2000, { required: true, mrkdwn: true });
          });
        }
      }
      if (b.accessory !== undefined) element(issues, b.accessory, `${pointer}/accessory`, ACTION_ELEMENTS);
      break;
    case "header":
      textObject(issues, b.text, `${pointer}/text`, 150, { required: true });
      break;
    case "context":
    case "actions": {
      const max = type === "context" ? 10 : 25;
      if (!Array.isArray(b.elements) || b.elements.length === 0)
        issues.add(`${pointer}/elements`, "must provide at least 1 item");
      else {
        if (b.elements.length > max) issues.add(`${pointer}/elements`, `no more than ${max} items allowed`);
        b.elements.forEach((e, i) => {
          const p = `${pointer}/elements/${i}`;
          if (type === "actions") {
            element(issues, e, p, ACTION_ELEMENTS);
            return;
          }
          if (isObject(e) && e.type === "image") {
            element(issues, e, p, new Set(["image"]));
            return;
          }
          textObject(issues, e, p, 3000, { required: true, mrkdwn: true });
        });
      }
      break;
    }
    case "image":
      if (b.image_url === undefined && b.slack_file === undefined)
        issues.add(pointer, "must provide one of: image_url, slack_file");
      stringField(issues, b.image_url, `${pointer}/image_url`, 3000);
      stringField(issues, b.alt_text, `${pointer}/alt_text`, 2000, true);
      textObject(issues, b.title, `${pointer}/title`, 2000);
      break;
  }
}

/**
 * Every problem of `view` as Slack words it (empty when the view is valid). Block ids must
 * be unique in the view: they key `view.state.values`.
 */
export function viewProblems(view: unknown, pointer = "/view"): string[] {
  const issues = new Issues();
  if (!isObject(view)) {
    issues.add(pointer, "must provide an object");
    return issues.messages;
  }
  if (view.type !== "modal") issues.add(`${pointer}/type`, "must be one of: modal");
  textObject(issues, view.title, `${pointer}/title`, 24, { required: true });
  textObject(issues, view.submit, `${pointer}/submit`, 24);
  textObject(issues, view.close, `${pointer}/close`, 24);
  stringField(issues, view.callback_id, `${pointer}/callback_id`, 255);
  stringField(issues, view.private_metadata, `${pointer}/private_metadata`, 3000);
  stringField(issues, view.external_id, `${pointer}/external_id`, 255);
  if (!Array.isArray(view.blocks)) {
    missing(issues, `${pointer}/blocks`);
    return issues.messages;
  }
  if (view.blocks.length > 100) issues.add(`${pointer}/blocks`, "no more than 100 items allowed");
  const ids = new Set<string>();
  view.blocks.forEach((b, i) => {
    const p = `${pointer}/blocks/${i}`;
    if (!isObject(b)) {
      issues.add(p, "must provide an object");
      return;
    }
    if (!MODAL_BLOCKS.has(String(b.type))) {
      issues.add(`${p}/type`, `unsupported block type: ${b.type}`);
      return;
    }
    stringField(issues, b.block_id, `${p}/block_id`, 255);
    if (typeof b.block_id === "string") {
      if (ids.has(b.block_id)) issues.add(`${p}/block_id`, `duplicate block_id: ${b.block_id}`);
      ids.add(b.block_id);
    }
    block(issues, b, p);
  });
  if (view.submit === undefined && view.blocks.some((b) => isObject(b) && b.type === "input"))
    issues.add(pointer, "missing required field: submit (required when the view has input blocks)");
  return issues.messages;
}

const ID_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const generatedId = () =>
  Array.from({ length: 5 }, () => ID_CHARS[Math.floor(Math.random() * ID_CHARS.length)]).join("");

/** Adds `emoji: true` to plain_text objects, as Slack does in the views it returns. */
function withEmoji(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withEmoji);
  if (!isObject(v)) return v;
  const out: Params = {};
  for (const [k, x] of Object.entries(v)) out[k] = withEmoji(x);
  if (out.type === "plain_text" && typeof out.text === "string" && out.emoji === undefined) out.emoji = true;
  return out;
}

/**
 * The blocks of a valid view as Slack stores them: a generated `block_id` for blocks that
 * have none and an `action_id` for input elements that have none (Slack reports state by
 * both), and `emoji: true` on plain text.
 */
export function storedBlocks(blocks: Params[]): Params[] {
  return blocks.map((b) => {
    const out = withEmoji(b) as Params;
    if (typeof out.block_id !== "string") out.block_id = generatedId();
    if (isObject(out.element) && typeof out.element.action_id !== "string")
      out.element.action_id = generatedId();
    return out;
  });
}

export const plainTextJson = (v: unknown) => (isObject(v) ? (withEmoji(v) as Params) : null);
