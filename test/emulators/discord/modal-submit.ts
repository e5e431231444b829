import type { IncomingFile } from "./index.js";
import { ModalType } from "./modals.js";
import { ALL_PERMISSIONS, type DiscordState } from "./state.js";
import type { ModalComponent, OpenedModal, StoredInteraction } from "./types.js";

/**
 * What a person enters in a modal input, by the input's type: a text input takes a string; a
 * string, user, role, mentionable or channel select and a checkbox group take the values (ids
 * for the auto-populated selects); a radio group takes a value or null; a checkbox a boolean;
 * a file upload the files.
 */
export type ModalValue = string | string[] | boolean | null | IncomingFile[];

type Json = Record<string, unknown>;

/**
 * The `data` of the MODAL_SUBMIT interaction for `modal` filled in with `values`, in the shape
 * Discord sends (discord-api-types' APIModalSubmission): legacy action rows with their text
 * inputs' values, Labels with their component's `value` or `values`, Text Displays with only
 * their id, and `resolved` for users, roles, channels and files picked. Inputs left out keep
 * what the modal pre-filled. Throws when the person could not have submitted this (a missing
 * required answer, a value that is not an option, too few or too many values, text too long):
 * Discord's client does not let them.
 */
export function modalSubmission(
  s: DiscordState,
  modal: OpenedModal,
  values: Record<string, ModalValue>,
  channelId: string,
): Json {
  const known = new Set(modal.fields.map((f) => f.customId));
  const unknown = Object.keys(values).filter((k) => !known.has(k));
  if (unknown.length) {
    throw new Error(`emulator: modal ${modal.customId} has no input ${unknown.join(", ")}`);
  }
  const resolved = new Resolved(s, channelId);
  const answer = (c: ModalComponent): Json => answerOf(c, values[String(c.custom_id)], resolved);
  const components = modal.components.map((top): Json => {
    if (top.type === ModalType.ActionRow) {
      return { type: top.type, id: top.id, components: (top.components as ModalComponent[]).map(answer) };
    }
    if (top.type === ModalType.Label) {
      return { type: top.type, id: top.id, component: answer(top.component as ModalComponent) };
    }
    return { type: top.type, id: top.id };
  });
  return { custom_id: modal.customId, components, ...resolved.json() };
}

function answerOf(c: ModalComponent, given: ModalValue | undefined, resolved: Resolved): Json {
  const id = String(c.custom_id);
  const base = { type: c.type, id: c.id, custom_id: id };
  const fail = (why: string): never => {
    throw new Error(`emulator: cannot submit ${id}: ${why}`);
  };
  const required = c.required !== false;
  switch (c.type) {
    case ModalType.TextInput: {
      const value = given ?? (typeof c.value === "string" ? c.value : "");
      if (typeof value !== "string") return fail("a text input takes a string");
      const min = typeof c.min_length === "number" ? c.min_length : 0;
      const max = typeof c.max_length === "number" ? c.max_length : 4000;
      if (value === "" && required) fail("it is required");
      if (value !== "" && (value.length < min || value.length > max)) {
        fail(`${value.length} characters, not between ${min} and ${max}`);
      }
      return { ...base, value };
    }
    case ModalType.Checkbox: {
      const value = given ?? c.default === true;
      if (typeof value !== "boolean") return fail("a checkbox takes a boolean");
      return { ...base, value };
    }
    case ModalType.RadioGroup: {
      const options = (c.options as Json[]).map((o) => String(o.value));
      const preset = (c.options as Json[]).find((o) => o.default === true)?.value;
      const value = given === undefined ? (preset ?? null) : given;
      if (value === null) {
        if (required) fail("it is required");
        return { ...base, value: null };
      }
      if (typeof value !== "string" || !options.includes(value)) fail(`${String(value)} is not an option`);
      return { ...base, value };
    }
    case ModalType.FileUpload: {
      const files = given ?? [];
      if (!Array.isArray(files) || files.some((f) => typeof f === "string")) {
        return fail("a file upload takes files ({ filename, contentType, data })");
      }
      countWithin(files.length, c, 1, required, fail);
      return { ...base, values: (files as IncomingFile[]).map((f) => resolved.file(f)) };
    }
    default:
      break;
  }
  const selected = given ?? presetValues(c);
  if (!Array.isArray(selected) || selected.some((v) => typeof v !== "string")) {
    return fail("it takes a list of values");
  }
  const values = selected as string[];
  if (new Set(values).size !== values.length) fail("a value is picked twice");
  if (c.type === ModalType.StringSelect || c.type === ModalType.CheckboxGroup) {
    const options = (c.options as Json[]).map((o) => String(o.value));
    const stray = values.find((v) => !options.includes(v));
    if (stray !== undefined) fail(`${stray} is not an option`);
    const max = c.type === ModalType.CheckboxGroup ? options.length : 1;
    countWithin(values.length, c, max, required, fail);
    return { ...base, values };
  }
  countWithin(values.length, c, 1, required, fail);
  for (const v of values) resolved.pick(c, v, fail);
  return { ...base, values };
}

/** What a select or checkbox group shows selected before the person touches it. */
function presetValues(c: ModalComponent): string[] {
  if (Array.isArray(c.options)) {
    return (c.options as Json[]).filter((o) => o.default === true).map((o) => String(o.value));
  }
  if (Array.isArray(c.default_values)) return (c.default_values as Json[]).map((d) => String(d.id));
  return [];
}

function countWithin(
  count: number,
  c: ModalComponent,
  defaultMax: number,
  required: boolean,
  fail: (why: string) => never,
): void {
  if (count === 0) {
    if (required && c.min_values !== 0) fail("it is required");
    return;
  }
  const min = typeof c.min_values === "number" ? c.min_values : 1;
  const max = typeof c.max_values === "number" ? c.max_values : defaultMax;
  if (count < min || count > max) fail(`${count} values, not between ${min} and ${max}`);
}

/** `data.resolved`: the users, members, roles, channels and attachments the person picked. */
class Resolved {
  private readonly users: Json = {};
  private readonly members: Json = {};
  private readonly roles: Json = {};
  private readonly channels: Json = {};
  private readonly attachments: Json = {};

  private readonly guildId: string | undefined;

  constructor(
    private readonly s: DiscordState,
    private readonly channelId: string,
  ) {
    this.guildId = s.channels.get(channelId)?.guild_id;
  }

  pick(c: ModalComponent, id: string, fail: (why: string) => never): void {
    const s = this.s;
    const user = s.users.get(id);
    const isRole = id === s.guildId || s.roles.has(id);
    if (c.type === ModalType.UserSelect || (c.type === ModalType.MentionableSelect && user)) {
      if (!user) fail(`no user ${id}`);
      this.users[id] = user;
      if (this.guildId) {
        const { user: _u, ...member } = s.member(user);
        this.members[id] = { ...member, permissions: ALL_PERMISSIONS };
      }
    } else if (c.type === ModalType.RoleSelect || c.type === ModalType.MentionableSelect) {
      if (!isRole) fail(`no role ${id}`);
      const roles = s.guildCreate().roles as Json[];
      this.roles[id] = roles.find((r) => r.id === id);
    } else if (c.type === ModalType.ChannelSelect) {
      const channel = s.channels.get(id);
      if (!channel) fail(`no channel ${id}`);
      const types = Array.isArray(c.channel_types) ? (c.channel_types as number[]) : [];
      if (types.length && !types.includes(channel.type)) fail(`channel ${id} is not of a type it offers`);
      this.channels[id] = {
        id,
        type: channel.type,
        ...(channel.name === undefined ? {} : { name: channel.name }),
        ...(channel.parent_id === undefined ? {} : { parent_id: channel.parent_id }),
        ...(channel.thread_metadata ? { thread_metadata: channel.thread_metadata } : {}),
        permissions: ALL_PERMISSIONS,
      };
    }
  }

  /** Stores an uploaded file and returns its attachment id. */
  file(f: IncomingFile): string {
    const a = this.s.storeFile(this.channelId, f);
    const { id, url } = a;
    this.attachments[id] = {
      id,
      filename: f.filename,
      size: f.data.length,
      url,
      proxy_url: url,
      content_type: f.contentType,
    };
    return id;
  }

  json(): { resolved?: Json } {
    const parts = Object.entries({
      users: this.users,
      members: this.members,
      roles: this.roles,
      channels: this.channels,
      attachments: this.attachments,
    }).filter(([, v]) => Object.keys(v).length > 0);
    return parts.length ? { resolved: Object.fromEntries(parts) } : {};
  }
}

/** Whether a submission of the modal has been answered: then Discord has closed it. */
export function modalClosed(modal: OpenedModal, interactions: Map<string, StoredInteraction>): boolean {
  return modal.submissions.some((id) => (interactions.get(id)?.callbacks.length ?? 0) > 0);
}

/**
 * The interaction whose modal a person has open: `interaction` (a record or its id), else the
 * modal `userId` opened last that is still open.
 */
export function modalOpener(
  interactions: Map<string, StoredInteraction>,
  o: { interaction?: StoredInteraction | string; userId?: string },
): StoredInteraction & { modal: OpenedModal } {
  if (o.interaction !== undefined) {
    const id = typeof o.interaction === "string" ? o.interaction : o.interaction.id;
    const opener = interactions.get(id);
    if (!opener?.modal) throw new Error(`emulator: interaction ${id} opened no modal`);
    if (o.userId !== undefined && o.userId !== opener.userId) {
      throw new Error(
        `emulator: the modal of interaction ${id} is open for ${opener.userId}, not ${o.userId}`,
      );
    }
    if (modalClosed(opener.modal, interactions)) {
      throw new Error(`emulator: the modal of interaction ${id} was submitted and answered: it is closed`);
    }
    return opener as StoredInteraction & { modal: OpenedModal };
  }
  if (o.userId === undefined) throw new Error("emulator: submitModal needs an interaction or a userId");
  const open = [...interactions.values()].filter(
    (i) => i.userId === o.userId && i.modal !== undefined && !modalClosed(i.modal, interactions),
  );
  const last = open.sort((a, b) => (a.modal?.openedAt ?? 0) - (b.modal?.openedAt ?? 0)).at(-1);
  if (!last) throw new Error(`emulator: ${o.userId} has no modal open`);
  return last as StoredInteraction & { modal: OpenedModal };
}
