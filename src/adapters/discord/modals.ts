import type { APIModalInteractionResponseCallbackData } from "discord.js";
import {
  DATETIME_HINT,
  defaultText,
  type FormField,
  type FormValues,
  type FormView,
  optionValue,
  rangeText,
} from "../../core/forms.js";
import { interactionId } from "../../runtime/interaction-ids.js";

/** Discord's modal limits (discord-api-types): title and labels 45 characters, descriptions 100, a select 25 options. */
const TITLE_MAX = 45;
const LABEL_MAX = 45;
const DESCRIPTION_MAX = 100;
const SELECT_OPTIONS_MAX = 25;
const TEXT_MAX = 4_000;
const PLACEHOLDER_MAX = 100;

/** A modal holds at most five top-level components (discord-api-types), here one field each. */
export const MODAL_FIELDS_MAX = 5;

const ComponentType = { StringSelect: 3, TextInput: 4, Label: 18, Checkbox: 23 } as const;

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * A form (one part of at most five fields) as a Discord modal: each field a Label holding
 * a text input, a select, or a checkbox. The server's message is in the thread already and
 * would take one of the five places, so it is not repeated here.
 */
export function discordModal(view: FormView): APIModalInteractionResponseCallbackData {
  return {
    custom_id: interactionId(view.ref, view.via ?? `p${view.part}`),
    title: cut(view.title || "Form", TITLE_MAX),
    components: view.fields.map((field) => ({
      type: ComponentType.Label,
      label: cut(field.label, LABEL_MAX),
      ...(field.description || field.kind !== "text"
        ? { description: cut(field.description ?? hintOf(field), DESCRIPTION_MAX) }
        : {}),
      component: componentOf(field),
    })) as unknown as APIModalInteractionResponseCallbackData["components"],
  };
}

function componentOf(field: FormField): Record<string, unknown> {
  const custom_id = field.id;
  const initial = defaultText(field);
  const options = field.options ?? [];
  if (field.kind === "boolean")
    return { type: ComponentType.Checkbox, custom_id, default: initial === "true" };
  if ((field.kind === "choice" || field.kind === "choices") && options.length <= SELECT_OPTIONS_MAX) {
    const defaults = Array.isArray(field.default) ? field.default : initial === undefined ? [] : [initial];
    const many = field.kind === "choices";
    return {
      type: ComponentType.StringSelect,
      custom_id,
      required: field.required || (many && (field.minItems ?? 0) > 0),
      options: options.map((o, i) => ({
        label: cut(o.label, 100),
        value: optionValue(field, i, 100),
        ...(defaults.includes(o.value) ? { default: true } : {}),
      })),
      min_values: many ? Math.min(field.minItems ?? 0, options.length) : field.required ? 1 : 0,
      max_values: many ? Math.min(field.maxItems ?? options.length, options.length) : 1,
    };
  }
  return {
    type: ComponentType.TextInput,
    custom_id,
    style: (field.maxLength ?? 0) > 300 ? 2 : 1,
    required: field.required,
    ...(initial ? { value: initial.slice(0, TEXT_MAX) } : {}),
    ...(field.minLength !== undefined ? { min_length: Math.min(field.minLength, TEXT_MAX) } : {}),
    ...(field.maxLength !== undefined
      ? { max_length: Math.max(1, Math.min(field.maxLength, TEXT_MAX)) }
      : {}),
    placeholder: cut(hintOf(field), PLACEHOLDER_MAX),
  };
}

/** What to type, where a text box stands in for a richer input. */
function hintOf(field: FormField): string {
  switch (field.kind) {
    case "email":
      return "An email address, like name@example.com";
    case "url":
      return "A web address, like https://example.com";
    case "date":
      return "A date as YYYY-MM-DD";
    case "datetime":
      return `A ${DATETIME_HINT}`;
    case "number":
      return `A number${rangeText(field)}`;
    case "integer":
      return `A whole number${rangeText(field)}`;
    case "boolean":
      return "Tick for yes";
    case "choice":
    case "choices":
      return `One of: ${(field.options ?? []).map((o) => o.label).join(", ")}`;
    default:
      return field.label;
  }
}

/** What a submitted modal's components hold, by custom id (discord.js' `fields.fields`). */
export function modalValues(fields: Iterable<[string, unknown]>): FormValues {
  const out: FormValues = {};
  for (const [id, raw] of fields) {
    const field = raw as { values?: readonly string[]; value?: unknown };
    if (Array.isArray(field.values)) out[id] = [...field.values];
    else if (typeof field.value === "boolean") out[id] = field.value ? "true" : "false";
    else out[id] = field.value == null ? "" : String(field.value);
  }
  return out;
}
