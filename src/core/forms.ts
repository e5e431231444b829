/**
 * A form a person fills in (an MCP server's elicitation), as every platform shows it:
 * Slack as a modal of input blocks, Discord as one or more modals of at most five fields.
 * Values come back as text (or lists of option values) and are checked here, so that
 * every platform refuses the same input with the same sentence.
 */

export type FieldKind =
  | "text"
  | "email"
  | "url"
  | "date"
  | "datetime"
  | "number"
  | "integer"
  | "boolean"
  | "choice"
  | "choices";

export interface FieldOption {
  value: string;
  label: string;
}

export interface FormField {
  /** The key the value is returned under (the schema's property name). */
  name: string;
  /** Short, platform-safe id of the input (`f0`, `f1`, …): property names may be anything. */
  id: string;
  label: string;
  description?: string;
  kind: FieldKind;
  required: boolean;
  default?: string | number | boolean | string[];
  options?: FieldOption[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
}

/** One modal to open: all of a form's fields, or one part of them where a platform shows few at once. */
export interface FormView {
  /** Its submission carries this ref (and `part`). */
  ref: string;
  title: string;
  /** What the server says the form is for. */
  intro?: string;
  fields: FormField[];
  /** 0-based part of `count`, when the form is shown in parts. */
  part: number;
  count: number;
  submitLabel: string;
  /** What its submission carries after the ref; `p{part}` when absent. */
  via?: string;
}

/** What a submission carries, by input id: text as typed, or the chosen options' values. */
export type FormValues = Record<string, string | string[]>;

export type Checked =
  | { ok: true; content: Record<string, string | number | boolean | string[]> }
  | { ok: false; errors: Record<string, string> };

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const YES = new Set(["true", "yes", "y", "on", "1"]);
const NO = new Set(["false", "no", "n", "off", "0", ""]);

/**
 * The typed content of a submission of `fields`, or a sentence per field that is wrong,
 * keyed by input id. An empty optional field is left out of the content.
 */
export function checkForm(fields: readonly FormField[], values: FormValues): Checked {
  const content: Record<string, string | number | boolean | string[]> = {};
  const errors: Record<string, string> = {};
  for (const field of fields) {
    const raw = values[field.id];
    const outcome = checkField(field, raw);
    if ("error" in outcome) errors[field.id] = `${field.label}: ${outcome.error}`;
    else if (outcome.value !== undefined) content[field.name] = outcome.value;
  }
  return Object.keys(errors).length > 0 ? { ok: false, errors } : { ok: true, content };
}

type FieldOutcome = { value?: string | number | boolean | string[] } | { error: string };

function checkField(field: FormField, raw: string | string[] | undefined): FieldOutcome {
  if (field.kind === "choices") return checkChoices(field, raw);
  const text = (Array.isArray(raw) ? raw.join(",") : (raw ?? "")).trim();
  if (field.kind === "boolean") {
    const word = text.toLowerCase();
    if (YES.has(word)) return { value: true };
    if (NO.has(word))
      return field.required && word === "" ? { error: "choose yes or no." } : { value: false };
    return { error: "answer yes or no." };
  }
  if (text === "") return field.required ? { error: "this field is required." } : {};
  switch (field.kind) {
    case "email":
      return EMAIL.test(text)
        ? lengthChecked(field, text)
        : { error: "enter an email address, like name@example.com." };
    case "url":
      return isWebUrl(text)
        ? lengthChecked(field, text)
        : { error: "enter a web address starting with https://." };
    case "date":
      return isDate(text) ? { value: text } : { error: "enter a date as YYYY-MM-DD, like 2026-01-31." };
    case "datetime": {
      const at = toDateTime(text);
      return at ? { value: at } : { error: `enter a ${DATETIME_HINT}.` };
    }
    case "number":
    case "integer":
      return checkNumber(field, text);
    case "choice": {
      const option = findOption(field, text);
      return option ? { value: option.value } : { error: `choose one of ${optionList(field)}.` };
    }
    default:
      return lengthChecked(field, text);
  }
}

function lengthChecked(field: FormField, text: string): FieldOutcome {
  if (field.minLength !== undefined && text.length < field.minLength)
    return { error: `enter at least ${field.minLength} characters.` };
  if (field.maxLength !== undefined && text.length > field.maxLength)
    return { error: `enter at most ${field.maxLength} characters (this has ${text.length}).` };
  return { value: text };
}

/**
 * A number as people write it in English: digits with a point for decimals, commas only
 * between thousands. `Number` alone would take "2,5" (once its comma was dropped) for 25
 * and "0x10" for 16, and send them on as if they had been typed so.
 */
const DECIMAL = /^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

function checkNumber(field: FormField, text: string): FieldOutcome {
  const whole = field.kind === "integer";
  const range = rangeText(field);
  const n = DECIMAL.test(text) && /\d/.test(text) ? Number(text.replace(/,/g, "")) : Number.NaN;
  if (Number.isNaN(n) && /^\d+,\d{1,2}$/.test(text))
    return {
      error: `enter ${whole ? "a whole number" : "a number"}${range}, with a point for decimals (like 2.5).`,
    };
  if (!Number.isFinite(n) || (whole && !Number.isInteger(n)))
    return { error: `enter ${whole ? "a whole number" : "a number"}${range}.` };
  if (
    (field.minimum !== undefined && n < field.minimum) ||
    (field.maximum !== undefined && n > field.maximum)
  )
    return { error: `enter ${whole ? "a whole number" : "a number"}${range}.` };
  return { value: n };
}

export function rangeText(field: Pick<FormField, "minimum" | "maximum">): string {
  const { minimum: lo, maximum: hi } = field;
  if (lo !== undefined && hi !== undefined) return ` from ${lo} to ${hi}`;
  if (lo !== undefined) return ` of at least ${lo}`;
  if (hi !== undefined) return ` of at most ${hi}`;
  return "";
}

function checkChoices(field: FormField, raw: string | string[] | undefined): FieldOutcome {
  const picked = (Array.isArray(raw) ? raw : (raw ?? "").split(",")).map((v) => v.trim()).filter(Boolean);
  const values: string[] = [];
  for (const p of picked) {
    const option = findOption(field, p);
    if (!option) return { error: `"${p}" is not one of ${optionList(field)}.` };
    if (!values.includes(option.value)) values.push(option.value);
  }
  if (values.length === 0)
    return field.required || (field.minItems ?? 0) > 0 ? { error: "choose at least one." } : {};
  if (field.minItems !== undefined && values.length < field.minItems)
    return { error: `choose at least ${field.minItems}.` };
  if (field.maxItems !== undefined && values.length > field.maxItems)
    return { error: `choose at most ${field.maxItems}.` };
  return { value: values };
}

/** An option by its value, or by its label typed in any case (where a platform has only a text box). */
function findOption(field: FormField, text: string): FieldOption | undefined {
  const options = field.options ?? [];
  const lower = text.toLowerCase();
  const token = OPTION_TOKEN.exec(text);
  return (
    options.find((o) => o.value === text) ??
    options.find((o) => o.label.toLowerCase() === lower) ??
    (token ? options[Number(token[1])] : undefined)
  );
}

const OPTION_TOKEN = /^#option-(\d+)$/;

/**
 * What a platform's select carries for an option: its value, or, when the value is
 * longer than the platform takes (Slack 150, Discord 100), a token naming its place,
 * which a submission resolves back to the whole value. Cut instead, the value came back
 * shortened, matched no option and could never be chosen (and two cut alike collided).
 */
export function optionValue(field: FormField, index: number, max: number): string {
  const value = field.options?.[index]?.value ?? "";
  return value.length <= max ? value : `#option-${index}`;
}

function optionList(field: FormField): string {
  const labels = (field.options ?? []).map((o) => o.label);
  return labels.length > 8 ? `${labels.slice(0, 8).join(", ")}, …` : labels.join(", ");
}

function isWebUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === "https:" || url.protocol === "http:";
  } catch {
    return false;
  }
}

/** How a date and time is typed where a text box stands in for a picker (Discord). */
export const DATETIME_HINT = "date and time in UTC as YYYY-MM-DD HH:MM, like 2026-01-31 09:30";

const DATETIME = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?\s*(Z|UTC|[+-]\d{2}:?\d{2})?$/i;

/**
 * A date and time as RFC 3339 wants it, which is how MCP servers check `format:
 * date-time`: with seconds and a zone. Typed without a zone it is UTC, as the hint says;
 * an offset typed with it is kept.
 */
export function toDateTime(text: string): string | undefined {
  const m = DATETIME.exec(text.trim());
  if (!m) return undefined;
  const [, date = "", hh = "", mm = "", ss = "00", fraction = "", typed] = m;
  if (!isDate(date) || Number(hh) > 23 || Number(mm) > 59 || Number(ss) > 59) return undefined;
  let zone = "Z";
  if (typed && !/^(z|utc)$/i.test(typed)) {
    const digits = typed.replace(":", "");
    if (Number(digits.slice(1, 3)) > 23 || Number(digits.slice(3)) > 59) return undefined;
    zone = `${digits.slice(0, 3)}:${digits.slice(3)}`;
  }
  return `${date}T${hh}:${mm}:${ss}${fraction}${zone}`;
}

function isDate(text: string): boolean {
  if (!DATE.test(text)) return false;
  const d = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(text);
}

/** A field's default as text (what a text box is pre-filled with). */
export function defaultText(field: FormField): string | undefined {
  const d = field.default;
  if (d === undefined) return undefined;
  if (Array.isArray(d)) return d.join(", ");
  return String(d);
}

/** Splits fields into views of at most `perView` fields each. */
export function formParts(fields: readonly FormField[], perView: number): FormField[][] {
  const parts: FormField[][] = [];
  for (let i = 0; i < fields.length; i += perView) parts.push(fields.slice(i, i + perView));
  return parts.length > 0 ? parts : [[]];
}
