import type { ViewStateValue } from "@slack/bolt";
import {
  defaultText,
  type FormField,
  type FormValues,
  type FormView,
  optionValue,
} from "../../core/forms.js";
import { interactionId } from "../../runtime/interaction-ids.js";
import { toMrkdwn } from "./mrkdwn.js";

/** Slack's limits for a modal (Block Kit reference): title and buttons 24 characters, option text 75. */
const TITLE_MAX = 24;
const OPTION_TEXT_MAX = 75;
const OPTION_VALUE_MAX = 150;
const SELECT_OPTIONS_MAX = 100;
const TEXT_INPUT_MAX = 3_000;

function plain(text: string, max: number) {
  return { type: "plain_text" as const, text: text.length > max ? `${text.slice(0, max - 1)}…` : text };
}

/** A form as a Slack modal: its intro, then one input block per field (block and action id = the field's id). */
export function slackModal(view: FormView, privateMetadata: string): Record<string, unknown> {
  const intro = view.intro ? toMrkdwn(view.intro) : "";
  return {
    type: "modal",
    callback_id: interactionId(view.ref, view.via ?? `p${view.part}`),
    private_metadata: privateMetadata,
    title: plain(view.title || "Form", TITLE_MAX),
    submit: plain(view.submitLabel, TITLE_MAX),
    close: plain("Close", TITLE_MAX),
    blocks: [
      ...(intro
        ? [
            {
              type: "section",
              text: { type: "mrkdwn", text: intro.length > 3000 ? `${intro.slice(0, 2999)}…` : intro },
            },
          ]
        : []),
      ...view.fields.map(inputBlock),
    ],
  };
}

function inputBlock(field: FormField): Record<string, unknown> {
  return {
    type: "input",
    block_id: field.id,
    label: plain(field.label, 2000),
    // A boolean always has an answer (No when left alone); Slack's own check is only for "required".
    optional: !field.required,
    ...(hintOf(field) ? { hint: plain(hintOf(field) ?? "", 2000) } : {}),
    element: elementOf(field),
  };
}

function option(value: string, label: string) {
  return { text: plain(label, OPTION_TEXT_MAX), value };
}

/** More options than a select holds: the field is a text box, and its hint lists the choices. */
function typed(field: FormField): boolean {
  return (
    (field.kind === "choice" || field.kind === "choices") && (field.options ?? []).length > SELECT_OPTIONS_MAX
  );
}

function typedChoice(field: FormField, action_id: string): Record<string, unknown> {
  const many = field.kind === "choices" ? "one or more, separated by commas, " : "";
  const initial = Array.isArray(field.default) ? field.default.join(", ") : defaultText(field);
  return {
    type: "plain_text_input",
    action_id,
    placeholder: plain(`Type ${many}as listed below`, 150),
    ...(initial ? { initial_value: initial.slice(0, TEXT_INPUT_MAX) } : {}),
  };
}

function hintOf(field: FormField): string | undefined {
  if (!typed(field)) return field.description;
  const choices = `Choices: ${(field.options ?? []).map((o) => o.label).join(", ")}`;
  return field.description ? `${field.description}\n${choices}` : choices;
}

function elementOf(field: FormField): Record<string, unknown> {
  const action_id = field.id;
  const initial = defaultText(field);
  switch (field.kind) {
    case "email":
      return { type: "email_text_input", action_id, ...(initial ? { initial_value: initial } : {}) };
    case "url":
      return { type: "url_text_input", action_id, ...(initial ? { initial_value: initial } : {}) };
    case "date":
      return {
        type: "datepicker",
        action_id,
        ...(initial && /^\d{4}-\d{2}-\d{2}$/.test(initial) ? { initial_date: initial } : {}),
      };
    case "datetime": {
      const at = initial ? Date.parse(initial) : Number.NaN;
      return {
        type: "datetimepicker",
        action_id,
        ...(Number.isFinite(at) ? { initial_date_time: Math.floor(at / 1000) } : {}),
      };
    }
    case "number":
    case "integer":
      return {
        type: "number_input",
        action_id,
        is_decimal_allowed: field.kind === "number",
        ...(initial !== undefined && initial !== "" ? { initial_value: initial } : {}),
        ...(field.minimum !== undefined ? { min_value: String(field.minimum) } : {}),
        ...(field.maximum !== undefined ? { max_value: String(field.maximum) } : {}),
      };
    case "boolean": {
      const options = [option("true", "Yes"), option("false", "No")];
      const chosen = initial === undefined ? undefined : options.find((o) => o.value === initial);
      return { type: "radio_buttons", action_id, options, ...(chosen ? { initial_option: chosen } : {}) };
    }
    case "choice":
    case "choices": {
      // More than a select holds: typed, as on Discord past its 25 (labels are matched in any case).
      if (typed(field)) return typedChoice(field, action_id);
      const defaults = Array.isArray(field.default) ? field.default : initial === undefined ? [] : [initial];
      const all = (field.options ?? []).map((o, i) => ({
        shown: option(optionValue(field, i, OPTION_VALUE_MAX), o.label),
        original: o.value,
      }));
      const options = all.map((o) => o.shown);
      const chosen = all.filter((o) => defaults.includes(o.original)).map((o) => o.shown);
      if (field.kind === "choice") {
        return {
          type: "static_select",
          action_id,
          options,
          ...(chosen[0] ? { initial_option: chosen[0] } : {}),
        };
      }
      return {
        type: "multi_static_select",
        action_id,
        options,
        ...(chosen.length ? { initial_options: chosen } : {}),
        ...(field.maxItems !== undefined ? { max_selected_items: field.maxItems } : {}),
      };
    }
    default:
      return {
        type: "plain_text_input",
        action_id,
        multiline: (field.maxLength ?? 0) > 300,
        ...(initial ? { initial_value: initial.slice(0, TEXT_INPUT_MAX) } : {}),
        ...(field.minLength !== undefined ? { min_length: Math.min(field.minLength, TEXT_INPUT_MAX) } : {}),
        ...(field.maxLength !== undefined ? { max_length: Math.min(field.maxLength, TEXT_INPUT_MAX) } : {}),
      };
  }
}

type State = Partial<ViewStateValue> & { value?: string | null; selected_date_time?: number | null };

/** A submitted modal's values by action id: text as typed, one option's value, or several options' values. */
export function submittedValues(values: Record<string, Record<string, ViewStateValue>>): FormValues {
  const out: FormValues = {};
  for (const block of Object.values(values)) {
    for (const [id, raw] of Object.entries(block)) {
      const s = raw as State;
      if (s.selected_options) out[id] = s.selected_options.map((o) => o.value ?? "");
      else if (s.selected_date_time != null)
        out[id] = new Date(s.selected_date_time * 1000).toISOString().replace(".000Z", "Z");
      else out[id] = s.value ?? s.selected_option?.value ?? s.selected_date ?? "";
    }
  }
  return out;
}
