import { FieldChecker, FormErrors, type Path } from "./form-body.js";
import type { ModalComponent, ModalField, OpenedModal, StoredInteraction } from "./types.js";

/**
 * Modals (interaction callback type 9) checked as Discord checks them: the interactions that
 * may open one, the shape of `data` (custom id, title, 1-5 top-level components: Labels, Text
 * Displays or legacy action rows with one text input) and every limit of the inputs. Errors
 * come back as Discord's 50035 Invalid Form Body, nested by field path with array indices as
 * keys (`errors.data.components.0.label._errors`). See modal-submit.ts for the way back.
 */

export const ModalType = {
  ActionRow: 1,
  StringSelect: 3,
  TextInput: 4,
  UserSelect: 5,
  RoleSelect: 6,
  MentionableSelect: 7,
  ChannelSelect: 8,
  TextDisplay: 10,
  Label: 18,
  FileUpload: 19,
  RadioGroup: 21,
  CheckboxGroup: 22,
  Checkbox: 23,
} as const;

export const CALLBACK_MODAL = 9;
const AUTO_SELECTS: number[] = [
  ModalType.UserSelect,
  ModalType.RoleSelect,
  ModalType.MentionableSelect,
  ModalType.ChannelSelect,
];
const DEFAULT_VALUE_TYPES: Record<number, string[]> = {
  [ModalType.UserSelect]: ["user"],
  [ModalType.RoleSelect]: ["role"],
  [ModalType.MentionableSelect]: ["user", "role"],
  [ModalType.ChannelSelect]: ["channel"],
};
/** Largest component id (a 32-bit integer, as @discordjs/builders checks it). */
const MAX_ID = 4_294_967_295;

type Json = Record<string, unknown>;

/**
 * The callback types each interaction type takes, where a modal is not among them, worded as
 * Discord words the refusal (`errors.type`: BASE_TYPE_CHOICES).
 */
const NO_MODAL: Record<number, [number, string][]> = {
  // PING
  1: [[1, "PONG"]],
  // APPLICATION_COMMAND_AUTOCOMPLETE
  4: [[8, "APPLICATION_COMMAND_AUTOCOMPLETE_RESULT"]],
  // MODAL_SUBMIT: a modal cannot open another modal.
  5: [
    [4, "CHANNEL_MESSAGE_WITH_SOURCE"],
    [5, "DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE"],
    [6, "DEFERRED_UPDATE_MESSAGE"],
    [7, "UPDATE_MESSAGE"],
    [10, "PREMIUM_UPSELL"],
  ],
};

/**
 * Checks a type-9 callback for interaction `i` and returns the modal the person now sees;
 * throws Discord's 400 (50035) when the interaction cannot open a modal or `data` is invalid.
 */
export function openModal(i: StoredInteraction, data: unknown): OpenedModal {
  const allowed = NO_MODAL[i.type];
  if (allowed) {
    const errors = new FormErrors();
    const names = allowed.map(([n, name]) => `<InteractionCallbackTypes.${name}: ${n}>`).join(", ");
    errors.add(["type"], "BASE_TYPE_CHOICES", `Value must be one of {${names}}.`);
    errors.throwIfAny();
  }
  const c = new Checker();
  if (!isObject(data)) {
    c.errors.add(["data"], "BASE_TYPE_REQUIRED", "This field is required");
    c.errors.throwIfAny();
  }
  const d = data as Json;
  c.string(["data", "custom_id"], d.custom_id, 1, 100, true);
  c.string(["data", "title"], d.title, 1, 45, true);
  const list = c.list(["data", "components"], d.components, 1, 5, true);
  list?.forEach((comp, n) => {
    c.topLevel(["data", "components", n], comp);
  });
  c.errors.throwIfAny();
  const components = withIds(structuredClone(list ?? []) as ModalComponent[]);
  const fields: ModalField[] = [];
  const texts: string[] = [];
  for (const top of components) {
    if (top.type === ModalType.TextDisplay) texts.push(String(top.content));
    if (top.type === ModalType.ActionRow) {
      const input = (top.components as ModalComponent[])[0] as ModalComponent;
      fields.push({
        customId: String(input.custom_id),
        type: input.type,
        label: String(input.label),
        component: input,
      });
    }
    if (top.type === ModalType.Label) {
      const input = top.component as ModalComponent;
      fields.push({
        customId: String(input.custom_id),
        type: input.type,
        label: String(top.label),
        ...(typeof top.description === "string" ? { description: top.description } : {}),
        component: input,
      });
    }
  }
  return {
    customId: String(d.custom_id),
    title: String(d.title),
    components,
    fields,
    texts,
    openedAt: Date.now(),
    submissions: [],
  };
}

/**
 * Fills in missing component ids as Discord does: sequentially from 1, depth first, skipping
 * the ids the bot set itself.
 */
function withIds(components: ModalComponent[]): ModalComponent[] {
  const all: Json[] = [];
  const walk = (c: Json): void => {
    all.push(c);
    if (Array.isArray(c.components)) for (const child of c.components) walk(child as Json);
    if (isObject(c.component)) walk(c.component);
  };
  for (const c of components) walk(c);
  const used = new Set(all.map((c) => c.id).filter((id) => typeof id === "number"));
  let next = 1;
  for (const c of all) {
    if (typeof c.id === "number") continue;
    while (used.has(next)) next += 1;
    c.id = next;
    used.add(next);
  }
  return components;
}

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Field checks that record Discord's error for each bad field and carry on, as Discord reports them all. */
class Checker extends FieldChecker {
  private readonly customIds = new Set<string>();

  topLevel(at: Path, comp: unknown): void {
    if (!isObject(comp)) {
      this.invalidType(at);
      return;
    }
    this.id(at, comp.id);
    if (comp.type === ModalType.TextDisplay) {
      this.string([...at, "content"], comp.content, 1, 4000, true);
    } else if (comp.type === ModalType.Label) {
      this.string([...at, "label"], comp.label, 1, 45, true);
      this.string([...at, "description"], comp.description, 1, 100, false);
      if (comp.component === undefined || comp.component === null) {
        this.errors.add([...at, "component"], "BASE_TYPE_REQUIRED", "This field is required");
      } else {
        this.inLabel([...at, "component"], comp.component);
      }
    } else if (comp.type === ModalType.ActionRow) {
      this.actionRow(at, comp);
    } else {
      this.invalidType(at);
    }
  }

  /** A legacy action row: exactly one text input, which carries its own label. */
  private actionRow(at: Path, row: Json): void {
    const inputs = this.list([...at, "components"], row.components, 1, 5, true);
    if (!inputs) return;
    if (inputs.length > 1) {
      this.errors.add(
        [...at, "components"],
        "COMPONENT_LAYOUT_WIDTH_EXCEEDED",
        "The specified component exceeds the maximum width",
      );
    }
    inputs.forEach((input, k) => {
      const path = [...at, "components", k];
      if (!isObject(input) || input.type !== ModalType.TextInput) {
        this.invalidType(path);
        return;
      }
      this.id(path, input.id);
      this.textInput(path, input, true);
    });
  }

  private inLabel(at: Path, comp: unknown): void {
    if (!isObject(comp)) {
      this.invalidType(at);
      return;
    }
    this.id(at, comp.id);
    const type = comp.type;
    if (type === ModalType.TextInput) this.textInput(at, comp, false);
    else if (type === ModalType.StringSelect) this.stringSelect(at, comp);
    else if (typeof type === "number" && AUTO_SELECTS.includes(type)) this.autoSelect(at, comp, type);
    else if (type === ModalType.FileUpload) this.fileUpload(at, comp);
    else if (type === ModalType.RadioGroup) this.radioGroup(at, comp);
    else if (type === ModalType.CheckboxGroup) this.checkboxGroup(at, comp);
    else if (type === ModalType.Checkbox) {
      this.customId(at, comp.custom_id);
      this.bool([...at, "default"], comp.default);
    } else this.invalidType(at);
  }

  private textInput(at: Path, t: Json, legacy: boolean): void {
    this.customId(at, t.custom_id);
    if (t.style === undefined || t.style === null) {
      this.errors.add([...at, "style"], "BASE_TYPE_REQUIRED", "This field is required");
    } else if (t.style !== 1 && t.style !== 2) {
      this.errors.add([...at, "style"], "BASE_TYPE_CHOICES", "Value must be one of (1, 2).");
    }
    if (legacy) this.string([...at, "label"], t.label, 1, 45, true);
    else if (t.label !== undefined) {
      // A text input in a Label takes its label from the Label.
      this.errors.add(
        [...at, "label"],
        "COMPONENT_LABEL_NOT_ALLOWED",
        "A text input in a label component cannot have its own label",
      );
    }
    this.int([...at, "min_length"], t.min_length, 0, 4000);
    this.int([...at, "max_length"], t.max_length, 1, 4000);
    this.string([...at, "value"], t.value, 0, 4000, false);
    this.string([...at, "placeholder"], t.placeholder, 0, 100, false);
    this.bool([...at, "required"], t.required);
  }

  private selectBase(at: Path, s: Json, maxValues: number): void {
    this.customId(at, s.custom_id);
    this.string([...at, "placeholder"], s.placeholder, 0, 150, false);
    this.int([...at, "min_values"], s.min_values, 0, maxValues);
    this.int([...at, "max_values"], s.max_values, 1, maxValues);
    this.bool([...at, "required"], s.required);
    // Selects in modals cannot be disabled (only in messages).
    if (s.disabled === true) {
      this.errors.add(
        [...at, "disabled"],
        "COMPONENT_DISABLED_NOT_ALLOWED",
        "Select menus in modals cannot be disabled",
      );
    }
    const min = typeof s.min_values === "number" ? s.min_values : 1;
    if (typeof s.max_values === "number" && min > s.max_values) {
      this.errors.add(
        [...at, "min_values"],
        "NUMBER_TYPE_MAX",
        `int value should be less than or equal to ${s.max_values}.`,
      );
    }
  }

  private stringSelect(at: Path, s: Json): void {
    this.selectBase(at, s, 25);
    const options = this.options(at, s.options, 1, 25, true);
    if (!options) return;
    if (typeof s.min_values === "number" && s.min_values > options.length) {
      this.errors.add(
        [...at, "min_values"],
        "NUMBER_TYPE_MAX",
        `int value should be less than or equal to ${options.length}.`,
      );
    }
    this.defaults(at, options.filter((o) => o.default === true).length, s.max_values ?? 1);
  }

  private autoSelect(at: Path, s: Json, type: number): void {
    this.selectBase(at, s, 25);
    const defaults = this.list([...at, "default_values"], s.default_values, 0, 25, false);
    defaults?.forEach((d, k) => {
      const path = [...at, "default_values", k];
      if (!isObject(d)) {
        this.invalidType(path);
        return;
      }
      this.string([...path, "id"], d.id, 1, 20, true);
      const kinds = DEFAULT_VALUE_TYPES[type] ?? [];
      if (!kinds.includes(String(d.type))) {
        this.errors.add(
          [...path, "type"],
          "BASE_TYPE_CHOICES",
          `Value must be one of (${kinds.map((x) => `'${x}'`).join(", ")}).`,
        );
      }
    });
    if (defaults) this.defaults(at, defaults.length, s.max_values ?? 1);
    if (type === ModalType.ChannelSelect) this.list([...at, "channel_types"], s.channel_types, 0, 20, false);
  }

  private fileUpload(at: Path, f: Json): void {
    this.customId(at, f.custom_id);
    this.int([...at, "min_values"], f.min_values, 0, 10);
    this.int([...at, "max_values"], f.max_values, 1, 10);
    this.bool([...at, "required"], f.required);
  }

  private radioGroup(at: Path, r: Json): void {
    this.customId(at, r.custom_id);
    this.bool([...at, "required"], r.required);
    const options = this.options(at, r.options, 2, 10, true);
    if (options) this.defaults(at, options.filter((o) => o.default === true).length, 1);
  }

  private checkboxGroup(at: Path, g: Json): void {
    this.customId(at, g.custom_id);
    this.int([...at, "min_values"], g.min_values, 0, 10);
    this.int([...at, "max_values"], g.max_values, 1, 10);
    this.bool([...at, "required"], g.required);
    const options = this.options(at, g.options, 1, 10, true);
    if (!options) return;
    const max = typeof g.max_values === "number" ? g.max_values : options.length;
    const min = typeof g.min_values === "number" ? g.min_values : 1;
    if (max > options.length) {
      this.errors.add(
        [...at, "max_values"],
        "NUMBER_TYPE_MAX",
        `int value should be less than or equal to ${options.length}.`,
      );
    }
    if (min > Math.min(max, options.length)) {
      this.errors.add(
        [...at, "min_values"],
        "NUMBER_TYPE_MAX",
        `int value should be less than or equal to ${Math.min(max, options.length)}.`,
      );
    }
    if (g.required === true && g.min_values === 0) {
      this.errors.add(
        [...at, "min_values"],
        "NUMBER_TYPE_MIN",
        "int value should be greater than or equal to 1.",
      );
    }
    this.defaults(at, options.filter((o) => o.default === true).length, max);
  }

  /** Options of a string select, radio group or checkbox group: label and value 1-100, unique values. */
  private options(at: Path, value: unknown, min: number, max: number, required: boolean): Json[] | undefined {
    const list = this.list([...at, "options"], value, min, max, required);
    if (!list) return undefined;
    const seen = new Set<string>();
    list.forEach((o, k) => {
      const path = [...at, "options", k];
      if (!isObject(o)) {
        this.invalidType(path);
        return;
      }
      this.string([...path, "label"], o.label, 1, 100, true);
      const v = this.string([...path, "value"], o.value, 1, 100, true);
      this.string([...path, "description"], o.description, 0, 100, false);
      this.bool([...path, "default"], o.default);
      if (v !== undefined && seen.has(v)) {
        this.errors.add(
          [...path, "value"],
          "SELECT_COMPONENT_OPTION_VALUE_DUPLICATED",
          "The specified option value is already used",
        );
      }
      if (v !== undefined) seen.add(v);
    });
    return list.filter(isObject);
  }

  private defaults(at: Path, count: number, max: unknown): void {
    if (typeof max === "number" && count > max) {
      this.errors.add(
        [...at, "options"],
        "SELECT_COMPONENT_TOO_MANY_DEFAULT_VALUES",
        "The specified number of default values exceeds the specified maximum values",
      );
    }
  }

  private customId(at: Path, value: unknown): void {
    const id = this.string([...at, "custom_id"], value, 1, 100, true);
    if (id === undefined) return;
    if (this.customIds.has(id)) {
      this.errors.add(
        [...at, "custom_id"],
        "COMPONENT_CUSTOM_ID_DUPLICATED",
        "Component custom id cannot be duplicated",
      );
    }
    this.customIds.add(id);
  }

  private id(at: Path, value: unknown): void {
    this.int([...at, "id"], value, 1, MAX_ID);
  }

  private invalidType(at: Path): void {
    this.errors.add(at, "COMPONENT_TYPE_INVALID", "The specified component type is invalid in this context");
  }
}
