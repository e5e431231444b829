import {
  ActionRowBuilder,
  ButtonBuilder,
  ButtonStyle,
  ChannelType,
  Client,
  Events,
  GatewayIntentBits,
  LabelBuilder,
  ModalBuilder,
  type ModalSubmitInteraction,
  Partials,
  TextInputBuilder,
  TextInputStyle,
} from "discord.js";
import { afterEach, describe, expect, it } from "vitest";
import { clickComponent, submitModal } from "./components.js";
import { DiscordEmulator, type DiscordEmulatorOptions, type StoredInteraction, waitFor } from "./index.js";

let emulator: DiscordEmulator;
let client: Client | undefined;

afterEach(async () => {
  await client?.destroy();
  client = undefined;
  await emulator.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status: number;
  body: {
    code?: number;
    message?: string;
    errors?: Record<string, unknown>;
    interaction?: Record<string, unknown>;
    resource?: Record<string, unknown>;
  };
}

/** A deliberately naive client: raw callbacks with fetch, no discord.js to check anything first. */
async function callback(rec: StoredInteraction, body: unknown, query = ""): Promise<Answer> {
  const res = await fetch(`${emulator.apiUrl}/v10/interactions/${rec.id}/${rec.token}/callback${query}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Answer["body"]) : {} };
}

const modal = (data: Record<string, unknown>) => ({ type: 9, data });

/** A modal with every kind of top-level component. */
function goodModal(): Record<string, unknown> {
  return {
    custom_id: "report",
    title: "Report a problem",
    components: [
      { type: 10, content: "Tell us what broke." },
      { type: 18, label: "Title", component: { type: 4, custom_id: "title", style: 1, max_length: 80 } },
      {
        type: 18,
        label: "Severity",
        description: "How bad is it?",
        component: {
          type: 3,
          custom_id: "severity",
          options: [
            { label: "Low", value: "low" },
            { label: "High", value: "high", default: true },
          ],
        },
      },
      {
        type: 1,
        components: [{ type: 4, custom_id: "details", label: "Details", style: 2, required: false }],
      },
      { type: 18, label: "Notify me", component: { type: 23, custom_id: "notify" } },
    ],
  };
}

/** The label component holding `component`, for one-input modals. */
const labelled = (component: Record<string, unknown>, label = "Field") => ({ type: 18, label, component });
const textInput = (customId: string) => ({ type: 4, custom_id: customId, style: 1 });

async function start(opts: DiscordEmulatorOptions = {}): Promise<void> {
  emulator = await DiscordEmulator.start(opts);
}

function slash(): StoredInteraction {
  return emulator.slash("report", {}, emulator.state.general, emulator.state.alice.id);
}

/** The Invalid Form Body errors at `path` (dotted, indices as keys), as Discord nests them. */
function errorAt(answer: Answer, path: string): { code: string; message: string }[] | undefined {
  let node: unknown = answer.body.errors;
  for (const key of path.split(".")) node = (node as Record<string, unknown> | undefined)?.[key];
  return (node as { _errors?: { code: string; message: string }[] } | undefined)?._errors;
}

describe("Discord emulator: modals for a naive client", () => {
  it("refuses a modal after the 3 s deadline with 404 Unknown interaction (10062)", async () => {
    await start({ interactions: { ackMs: 200 } });
    const rec = slash();
    await sleep(300);
    const answer = await callback(rec, modal(goodModal()));
    expect(answer).toMatchObject({ status: 404, body: { code: 10062, message: "Unknown interaction" } });
    expect(rec.modal).toBeUndefined();
    expect(rec.callbacks).toEqual([]);
  });

  it("refuses a modal as a second response with 400 already acknowledged (40060)", async () => {
    await start();
    const rec = slash();
    expect((await callback(rec, { type: 5 })).status).toBe(204);
    const answer = await callback(rec, modal(goodModal()));
    expect(answer).toMatchObject({
      status: 400,
      body: { code: 40060, message: "Interaction has already been acknowledged." },
    });
    expect(rec.modal).toBeUndefined();
    expect(rec.callbacks).toEqual([5]);
  });

  it("refuses a modal in answer to a modal submit or an autocomplete (400, 50035 on `type`), without acknowledging", async () => {
    await start();
    const opener = slash();
    expect((await callback(opener, modal(goodModal()))).status).toBe(204);
    const submit = submitModal(emulator, { interaction: opener, values: { title: "Login fails" } });
    const answer = await callback(submit, modal({ ...goodModal(), custom_id: "second" }));
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 50035, message: "Invalid Form Body" });
    expect(errorAt(answer, "type")?.[0]?.code).toBe("BASE_TYPE_CHOICES");
    expect(errorAt(answer, "type")?.[0]?.message).toContain("UPDATE_MESSAGE: 7");
    expect(submit.modal).toBeUndefined();
    // The refusal acknowledged nothing: the submission can still be answered in time.
    expect((await callback(submit, { type: 4, data: { content: "Thanks!", flags: 64 } })).status).toBe(204);
    expect(submit.callbacks).toEqual([4]);

    const typing = emulator.autocomplete(
      "report",
      { area: "lo" },
      "area",
      emulator.state.general,
      emulator.state.bob.id,
    );
    const refused = await callback(typing, modal(goodModal()));
    expect(refused.status).toBe(400);
    expect(errorAt(refused, "type")?.[0]?.message).toContain("APPLICATION_COMMAND_AUTOCOMPLETE_RESULT: 8");
    expect(typing.callbacks).toEqual([]);
  });

  it("refuses 6 top-level components with 400 Invalid Form Body (50035)", async () => {
    await start();
    const rec = slash();
    const components = Array.from({ length: 6 }, (_, n) => labelled(textInput(`f${n}`)));
    const answer = await callback(rec, modal({ ...goodModal(), components }));
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 50035, message: "Invalid Form Body" });
    expect(errorAt(answer, "data.components")).toEqual([
      { code: "BASE_TYPE_BAD_LENGTH", message: "Must be between 1 and 5 in length." },
    ]);
    expect(rec.callbacks).toEqual([]);
    // Five are fine, and the same interaction can still open it.
    expect((await callback(rec, modal({ ...goodModal(), components: components.slice(0, 5) }))).status).toBe(
      204,
    );
    expect(rec.modal?.fields.map((f) => f.customId)).toEqual(["f0", "f1", "f2", "f3", "f4"]);
  });

  it("refuses a title of 46 characters, and no components at all", async () => {
    await start();
    const rec = slash();
    const answer = await callback(rec, modal({ ...goodModal(), title: "t".repeat(46), components: [] }));
    expect(answer.status).toBe(400);
    expect(errorAt(answer, "data.title")).toEqual([
      { code: "BASE_TYPE_BAD_LENGTH", message: "Must be between 1 and 45 in length." },
    ]);
    // Every bad field is reported at once, as Discord does.
    expect(errorAt(answer, "data.components")?.[0]?.code).toBe("BASE_TYPE_BAD_LENGTH");
    expect((await callback(rec, modal({ ...goodModal(), title: "t".repeat(45) }))).status).toBe(204);
  });

  it("refuses custom ids used twice in the modal (COMPONENT_CUSTOM_ID_DUPLICATED)", async () => {
    await start();
    const rec = slash();
    const answer = await callback(
      rec,
      modal({
        ...goodModal(),
        components: [
          { type: 1, components: [{ ...textInput("same"), label: "Legacy" }] },
          labelled({
            type: 21,
            custom_id: "same",
            options: [
              { label: "A", value: "a" },
              { label: "B", value: "b" },
            ],
          }),
        ],
      }),
    );
    expect(answer.status).toBe(400);
    expect(errorAt(answer, "data.components.1.component.custom_id")).toEqual([
      { code: "COMPONENT_CUSTOM_ID_DUPLICATED", message: "Component custom id cannot be duplicated" },
    ]);
    expect(rec.modal).toBeUndefined();
  });

  it("checks every input's limits and placement", async () => {
    await start();
    const options = (n: number) => Array.from({ length: n }, (_, k) => ({ label: `o${k}`, value: `v${k}` }));
    const cases: [string, Record<string, unknown>, string, string][] = [
      [
        "long label",
        { type: 18, label: "l".repeat(46), component: textInput("a") },
        "0.label",
        "BASE_TYPE_BAD_LENGTH",
      ],
      [
        "long description",
        { type: 18, label: "L", description: "d".repeat(101), component: textInput("a") },
        "0.description",
        "BASE_TYPE_BAD_LENGTH",
      ],
      ["label without component", { type: 18, label: "L" }, "0.component", "BASE_TYPE_REQUIRED"],
      ["long text display", { type: 10, content: "c".repeat(4001) }, "0.content", "BASE_TYPE_BAD_LENGTH"],
      ["style 3", labelled({ ...textInput("a"), style: 3 }), "0.component.style", "BASE_TYPE_CHOICES"],
      [
        "min_length 4001",
        labelled({ ...textInput("a"), min_length: 4001 }),
        "0.component.min_length",
        "NUMBER_TYPE_MAX",
      ],
      [
        "max_length 0",
        labelled({ ...textInput("a"), max_length: 0 }),
        "0.component.max_length",
        "NUMBER_TYPE_MIN",
      ],
      [
        "value 4001",
        labelled({ ...textInput("a"), value: "v".repeat(4001) }),
        "0.component.value",
        "BASE_TYPE_MAX_LENGTH",
      ],
      [
        "placeholder 101",
        labelled({ ...textInput("a"), placeholder: "p".repeat(101) }),
        "0.component.placeholder",
        "BASE_TYPE_MAX_LENGTH",
      ],
      [
        "custom id 101",
        labelled(textInput("i".repeat(101))),
        "0.component.custom_id",
        "BASE_TYPE_BAD_LENGTH",
      ],
      [
        "legacy input without label",
        { type: 1, components: [textInput("a")] },
        "0.components.0.label",
        "BASE_TYPE_REQUIRED",
      ],
      [
        "text input in a label with a label",
        labelled({ ...textInput("a"), label: "Own" }),
        "0.component.label",
        "COMPONENT_LABEL_NOT_ALLOWED",
      ],
      [
        "two inputs in a row",
        {
          type: 1,
          components: [
            { ...textInput("a"), label: "A" },
            { ...textInput("b"), label: "B" },
          ],
        },
        "0.components",
        "COMPONENT_LAYOUT_WIDTH_EXCEEDED",
      ],
      [
        "a select in an action row",
        { type: 1, components: [{ type: 3, custom_id: "s", options: options(2) }] },
        "0.components.0",
        "COMPONENT_TYPE_INVALID",
      ],
      [
        "a button in a label",
        labelled({ type: 2, custom_id: "b", style: 1, label: "B" }),
        "0.component",
        "COMPONENT_TYPE_INVALID",
      ],
      ["a container", { type: 17, components: [] }, "0", "COMPONENT_TYPE_INVALID"],
      [
        "select without options",
        labelled({ type: 3, custom_id: "s", options: [] }),
        "0.component.options",
        "BASE_TYPE_BAD_LENGTH",
      ],
      [
        "select of 26 options",
        labelled({ type: 3, custom_id: "s", options: options(26) }),
        "0.component.options",
        "BASE_TYPE_BAD_LENGTH",
      ],
      [
        "option label 101",
        labelled({ type: 3, custom_id: "s", options: [{ label: "x".repeat(101), value: "x" }] }),
        "0.component.options.0.label",
        "BASE_TYPE_BAD_LENGTH",
      ],
      [
        "select option value twice",
        labelled({ type: 3, custom_id: "s", options: [...options(1), ...options(1)] }),
        "0.component.options.1.value",
        "SELECT_COMPONENT_OPTION_VALUE_DUPLICATED",
      ],
      [
        "max_values 26",
        labelled({ type: 3, custom_id: "s", options: options(3), max_values: 26 }),
        "0.component.max_values",
        "NUMBER_TYPE_MAX",
      ],
      [
        "disabled select",
        labelled({ type: 3, custom_id: "s", options: options(2), disabled: true }),
        "0.component.disabled",
        "COMPONENT_DISABLED_NOT_ALLOWED",
      ],
      [
        "radio group of 1",
        labelled({ type: 21, custom_id: "r", options: options(1) }),
        "0.component.options",
        "BASE_TYPE_BAD_LENGTH",
      ],
      [
        "radio group of 11",
        labelled({ type: 21, custom_id: "r", options: options(11) }),
        "0.component.options",
        "BASE_TYPE_BAD_LENGTH",
      ],
      [
        "checkbox group of 0",
        labelled({ type: 22, custom_id: "c", options: [] }),
        "0.component.options",
        "BASE_TYPE_BAD_LENGTH",
      ],
      [
        "checkbox group of 11",
        labelled({ type: 22, custom_id: "c", options: options(11) }),
        "0.component.options",
        "BASE_TYPE_BAD_LENGTH",
      ],
      [
        "checkbox group max_values over its options",
        labelled({ type: 22, custom_id: "c", options: options(2), max_values: 3 }),
        "0.component.max_values",
        "NUMBER_TYPE_MAX",
      ],
      ["checkbox without custom id", labelled({ type: 23 }), "0.component.custom_id", "BASE_TYPE_REQUIRED"],
      [
        "user select min_values 26",
        labelled({ type: 5, custom_id: "u", min_values: 26 }),
        "0.component.min_values",
        "NUMBER_TYPE_MAX",
      ],
    ];
    for (const [name, component, path, code] of cases) {
      const rec = slash();
      const answer = await callback(rec, modal({ custom_id: "m", title: "T", components: [component] }));
      expect({ name, status: answer.status, code: answer.body.code }).toEqual({
        name,
        status: 400,
        code: 50035,
      });
      expect({ name, errors: errorAt(answer, `data.components.${path}`)?.map((e) => e.code) }).toEqual({
        name,
        errors: [code],
      });
      expect(rec.callbacks).toEqual([]);
    }
  });

  it("records a good modal as the person sees it, answers with_response, and sends its submission in Discord's shape", async () => {
    await start();
    const sent: { t: string; d: Record<string, unknown> }[] = [];
    const dispatch = emulator.dispatch.bind(emulator);
    emulator.dispatch = (t, d, intent) => {
      sent.push({ t, d: d as Record<string, unknown> });
      dispatch(t, d, intent);
    };
    const rec = slash();
    const answer = await callback(rec, modal(goodModal()), "?with_response=true");
    expect(answer).toMatchObject({
      status: 200,
      body: { interaction: { id: rec.id, type: 2, response_message_loading: false }, resource: { type: 9 } },
    });
    expect(answer.body.resource?.message).toBeUndefined();
    expect(rec.callbacks).toEqual([9]);
    expect(rec.originalId).toBeUndefined();
    const m = rec.modal!;
    expect(m).toMatchObject({
      customId: "report",
      title: "Report a problem",
      texts: ["Tell us what broke."],
    });
    expect(m.fields.map((f) => [f.customId, f.type, f.label, f.description])).toEqual([
      ["title", 4, "Title", undefined],
      ["severity", 3, "Severity", "How bad is it?"],
      ["details", 4, "Details", undefined],
      ["notify", 23, "Notify me", undefined],
    ]);
    // Ids filled in as Discord does: from 1, depth first.
    expect(m.components.map((c) => c.id)).toEqual([1, 2, 4, 6, 8]);
    expect(m.fields.map((f) => f.component.id)).toEqual([3, 5, 7, 9]);

    expect(() => submitModal(emulator, { userId: emulator.state.alice.id, values: { nope: "x" } })).toThrow(
      /no input nope/,
    );
    expect(() => submitModal(emulator, { userId: emulator.state.alice.id, values: { title: "" } })).toThrow(
      /title: it is required/,
    );
    expect(() =>
      submitModal(emulator, { userId: emulator.state.alice.id, values: { title: "x".repeat(81) } }),
    ).toThrow(/81 characters/);
    expect(() =>
      submitModal(emulator, { userId: emulator.state.alice.id, values: { title: "t", severity: ["huge"] } }),
    ).toThrow(/huge is not an option/);
    expect(() => submitModal(emulator, { userId: emulator.state.bob.id, values: {} })).toThrow(
      /no modal open/,
    );

    // The person's last opened modal, found by who they are.
    const submit = submitModal(emulator, {
      userId: emulator.state.alice.id,
      values: { title: "Login fails" },
    });
    const event = sent.find((e) => e.t === "INTERACTION_CREATE" && e.d.id === submit.id)!.d;
    expect(event).toMatchObject({
      type: 5,
      channel_id: emulator.state.general,
      member: { user: { id: emulator.state.alice.id } },
    });
    expect(event.message).toBeUndefined();
    expect(event.data).toEqual({
      custom_id: "report",
      components: [
        { type: 10, id: 1 },
        { type: 18, id: 2, component: { type: 4, id: 3, custom_id: "title", value: "Login fails" } },
        { type: 18, id: 4, component: { type: 3, id: 5, custom_id: "severity", values: ["high"] } },
        { type: 1, id: 6, components: [{ type: 4, id: 7, custom_id: "details", value: "" }] },
        { type: 18, id: 8, component: { type: 23, id: 9, custom_id: "notify", value: false } },
      ],
    });
    expect(m.submissions).toEqual([submit.id]);
    // Unanswered, the modal stays open and can be sent again; once answered, Discord closes it.
    const again = submitModal(emulator, {
      interaction: rec.id,
      values: { title: "Login fails", notify: true },
    });
    expect((await callback(again, { type: 6 })).status).toBe(204);
    expect(() => submitModal(emulator, { interaction: rec, values: { title: "third" } })).toThrow(/closed/);
  });
});

describe("Discord emulator: modals with the real discord.js client", () => {
  it("opens discord.js' modals and delivers their submissions so that ModalSubmitFields reads every value", async () => {
    await start({ rateLimits: { speed: 20 } });
    const s = emulator.state;
    s.defineRole("111111111111111111", "triage");
    const c = new Client({
      intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages],
      partials: [Partials.Channel],
      rest: { api: emulator.apiUrl },
    });
    client = c;
    const submits: ModalSubmitInteraction[] = [];
    const failures: unknown[] = [];
    c.on(Events.InteractionCreate, (i) => {
      const handle = async () => {
        if (i.isChatInputCommand()) {
          await i.showModal(
            new ModalBuilder()
              .setCustomId("report")
              .setTitle("Report a problem")
              .addLabelComponents(
                new LabelBuilder()
                  .setLabel("Title")
                  .setTextInputComponent(
                    new TextInputBuilder().setCustomId("title").setStyle(TextInputStyle.Short),
                  ),
                new LabelBuilder()
                  .setLabel("Severity")
                  .setStringSelectMenuComponent((b) =>
                    b
                      .setCustomId("severity")
                      .addOptions({ label: "Low", value: "low" }, { label: "High", value: "high" }),
                  ),
                new LabelBuilder()
                  .setLabel("When")
                  .setRadioGroupComponent((b) =>
                    b
                      .setCustomId("when")
                      .addOptions({ label: "Today", value: "today" }, { label: "Earlier", value: "earlier" }),
                  ),
                new LabelBuilder()
                  .setLabel("Areas")
                  .setCheckboxGroupComponent((b) =>
                    b
                      .setCustomId("areas")
                      .setMaxValues(2)
                      .addOptions(
                        { label: "Login", value: "login" },
                        { label: "Search", value: "search" },
                        { label: "Export", value: "export" },
                      ),
                  ),
                new LabelBuilder().setLabel("Notify me").setCheckboxComponent((b) => b.setCustomId("notify")),
              ),
          );
        } else if (i.isButton()) {
          await i.showModal({
            custom_id: "assign",
            title: "Assign",
            components: [
              { type: 10, content: "Who takes it?" },
              { type: 1, components: [{ type: 4, custom_id: "note", label: "Note", style: 2 }] },
              { type: 18, label: "Person", component: { type: 5, custom_id: "who" } },
              { type: 18, label: "Team", component: { type: 6, custom_id: "team" } },
              { type: 18, label: "Channel", component: { type: 8, custom_id: "where", channel_types: [0] } },
            ],
          });
        } else if (i.isModalSubmit()) {
          submits.push(i);
          await i.reply({ content: "Thanks!", flags: 64 });
        }
      };
      handle().catch((e: unknown) => failures.push(e));
    });
    const ready = new Promise<void>((resolve) => c.once(Events.ClientReady, () => resolve()));
    await c.login(emulator.token);
    await ready;

    const command = emulator.slash("report", {}, s.general, s.alice.id);
    await waitFor(() => command.modal);
    expect(command.modal?.fields.map((f) => f.label)).toEqual([
      "Title",
      "Severity",
      "When",
      "Areas",
      "Notify me",
    ]);
    const first = submitModal(emulator, {
      interaction: command,
      values: {
        title: "Login fails",
        severity: ["high"],
        when: "today",
        areas: ["login", "export"],
        notify: true,
      },
    });
    const form = await waitFor(() => submits.find((x) => x.id === first.id));
    expect(form.customId).toBe("report");
    expect(form.user.id).toBe(s.alice.id);
    expect(form.isFromMessage()).toBe(false);
    expect(form.fields.getTextInputValue("title")).toBe("Login fails");
    expect(form.fields.getStringSelectValues("severity")).toEqual(["high"]);
    expect(form.fields.getRadioGroup("when")).toBe("today");
    expect(form.fields.getCheckboxGroup("areas")).toEqual(["login", "export"]);
    expect(form.fields.getCheckbox("notify")).toBe(true);
    await waitFor(() => first.callbacks.length === 1);
    expect(first.callbacks).toEqual([4]);

    // A modal opened from a button: its submission carries the message.
    const channel = c.channels.cache.get(s.general);
    if (channel?.type !== ChannelType.GuildText) throw new Error("general is not a text channel");
    const posted = await channel.send({
      content: "New report",
      components: [
        new ActionRowBuilder<ButtonBuilder>().addComponents(
          new ButtonBuilder().setCustomId("assign").setLabel("Assign").setStyle(ButtonStyle.Primary),
        ),
      ],
    });
    const stored = emulator.state.findMessage(posted.id)!;
    const click = clickComponent(emulator, { message: stored, customId: "assign", userId: s.bob.id });
    await waitFor(() => click.modal);
    expect(click.modal?.texts).toEqual(["Who takes it?"]);
    expect(() =>
      submitModal(emulator, {
        interaction: click,
        values: { note: "n", who: [s.alice.id], team: ["1"], where: [s.general] },
      }),
    ).toThrow(/no role 1/);
    expect(() =>
      submitModal(emulator, {
        interaction: click,
        values: { note: "n", who: [s.alice.id], team: [s.guildId], where: [s.forum] },
      }),
    ).toThrow(/not of a type it offers/);
    const second = submitModal(emulator, {
      userId: s.bob.id,
      values: { note: "Mine now", who: [s.alice.id], team: ["111111111111111111"], where: [s.general] },
    });
    const assigned = await waitFor(() => submits.find((x) => x.id === second.id));
    expect(assigned.isFromMessage()).toBe(true);
    expect(assigned.message?.id).toBe(posted.id);
    expect(assigned.user.id).toBe(s.bob.id);
    expect(assigned.fields.getTextInputValue("note")).toBe("Mine now");
    expect([...(assigned.fields.getSelectedUsers("who")?.keys() ?? [])]).toEqual([s.alice.id]);
    expect([...(assigned.fields.getSelectedMembers("who")?.keys() ?? [])]).toEqual([s.alice.id]);
    expect(assigned.fields.getSelectedRoles("team")?.first()?.name).toBe("triage");
    expect(assigned.fields.getSelectedChannels("where")?.first()?.id).toBe(s.general);
    expect(failures).toEqual([]);
  });
});
