import { App, LogLevel, SocketModeReceiver, type ViewResponseAction } from "@slack/bolt";
import { ErrorCode, WebClient } from "@slack/web-api";
import { afterEach, describe, expect, it, vi } from "vitest";
import { SlackEmulator, type SlackEmulatorOptions, waitFor } from "./index.js";
import { clickAction, submitView } from "./interactive.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function emulator(options: SlackEmulatorOptions = {}): Promise<SlackEmulator> {
  const emu = await SlackEmulator.start(options);
  cleanups.push(() => emu.stop());
  return emu;
}

/** A naive client: no retries, no checks of its own. */
function client(emu: SlackEmulator): WebClient {
  return new WebClient(emu.botToken, {
    slackApiUrl: emu.apiUrl,
    retryConfig: { retries: 0 },
    logLevel: LogLevel.ERROR,
  });
}

type Answer = { ok: boolean; error?: string; view?: Record<string, unknown>; messages?: string[] };

/** A Web API call as plain JSON over fetch, as a client without an SDK makes it. */
async function call(emu: SlackEmulator, method: string, body: Record<string, unknown>): Promise<Answer> {
  const res = await fetch(`${emu.apiUrl}${method}`, {
    method: "POST",
    headers: { authorization: `Bearer ${emu.botToken}`, "content-type": "application/json; charset=utf-8" },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Answer & { response_metadata?: { messages?: string[] } };
  return { ...json, messages: json.response_metadata?.messages };
}

async function platformError(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    const e = err as { code?: string; data?: { error?: string } };
    return e.code === ErrorCode.PlatformError ? e.data?.error : e.code;
  }
}

/** A trigger_id as Slack hands one out: with a slash command (one no app here handles). */
const trigger = (emu: SlackEmulator, user = "U_ALICE") =>
  String(emu.slash("/trigger", "", user).delivery.payload.trigger_id);

const text = (t: string) => ({ type: "plain_text" as const, text: t });
const option = (label: string, value: string) => ({ text: text(label), value });
const sizes = [option("Small", "s"), option("Medium", "m"), option("Large", "l")];

function signup(over: Record<string, unknown> = {}) {
  return {
    type: "modal" as const,
    callback_id: "signup",
    private_metadata: "from C1",
    title: text("Sign up"),
    submit: text("Send"),
    close: text("Cancel"),
    blocks: [
      { type: "header", text: text("Welcome") },
      { type: "section", text: { type: "mrkdwn", text: "Tell us *about* you." } },
      {
        type: "input",
        block_id: "email",
        label: text("Email"),
        element: { type: "email_text_input", action_id: "email" },
      },
      {
        type: "input",
        block_id: "size",
        label: text("T-shirt"),
        element: { type: "static_select", action_id: "size", options: sizes, initial_option: sizes[1] },
      },
      {
        type: "input",
        block_id: "note",
        optional: true,
        label: text("Anything else?"),
        element: { type: "plain_text_input", action_id: "note", multiline: true },
      },
    ],
    ...over,
  };
}

/** A Bolt app that opens `signup` on /form and answers its submissions with `answer()`. */
async function formApp(emu: SlackEmulator, answer: () => ViewResponseAction | undefined = () => undefined) {
  const receiver = new SocketModeReceiver({
    appToken: emu.appToken,
    logLevel: LogLevel.ERROR,
    clientPingTimeout: 1_000,
    installerOptions: { clientOptions: { slackApiUrl: emu.apiUrl } },
  });
  const app = new App({
    token: emu.botToken,
    receiver,
    socketMode: true,
    logLevel: LogLevel.ERROR,
    clientOptions: { slackApiUrl: emu.apiUrl },
  });
  const submitted: Record<string, unknown>[] = [];
  app.command("/form", async ({ ack, client: web, body }) => {
    await ack();
    await web.views.open({ trigger_id: body.trigger_id, view: signup() });
  });
  app.view("signup", async ({ ack, view }) => {
    submitted.push(view.state.values);
    const response = answer();
    await (response ? ack(response) : ack());
  });
  cleanups.push(() => app.stop());
  await app.start();
  return { app, submitted };
}

async function openSignup(emu: SlackEmulator, user = "U_ALICE") {
  emu.slash("/form", "", user);
  return waitFor(() => emu.openView(user));
}

describe("Slack emulator: trigger ids", () => {
  it("opens a modal with a slash command's trigger and keeps it as the modal the user sees", async () => {
    const emu = await emulator();
    await formApp(emu);
    const open = await openSignup(emu);
    expect(open).toMatchObject({ user: "U_ALICE", open: true, errors: {} });
    expect(open.view).toMatchObject({
      type: "modal",
      callback_id: "signup",
      private_metadata: "from C1",
      title: { type: "plain_text", text: "Sign up", emoji: true },
      submit: { text: "Send" },
      root_view_id: open.id,
      state: { values: {} },
    });
    expect(open.id).toMatch(/^V[A-Z0-9]+$/);
    expect(open.view.hash).toMatch(/^\d+\.\w+$/);
    // Slack gives every block an id, which keys the submitted state.
    expect(open.view.blocks.every((b) => typeof b.block_id === "string")).toBe(true);
  });

  it("refuses a trigger older than 3 s with expired_trigger_id", async () => {
    const emu = await emulator();
    expect(emu.triggerTtlMs).toBe(3_000);
    const id = trigger(emu);
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(Date.now() + emu.triggerTtlMs + 1);
    expect(await platformError(client(emu).views.open({ trigger_id: id, view: signup() }))).toBe(
      "expired_trigger_id",
    );
    expect(emu.openView("U_ALICE")).toBeUndefined();
  });

  it("fails a naive app that does its work before opening the modal", async () => {
    const emu = await emulator({ triggerTtlMs: 150 });
    const app = new App({
      token: emu.botToken,
      receiver: new SocketModeReceiver({
        appToken: emu.appToken,
        logLevel: LogLevel.ERROR,
        installerOptions: { clientOptions: { slackApiUrl: emu.apiUrl } },
      }),
      socketMode: true,
      logLevel: LogLevel.ERROR,
      clientOptions: { slackApiUrl: emu.apiUrl, retryConfig: { retries: 0 } },
    });
    const errors: (string | undefined)[] = [];
    app.command("/form", async ({ ack, client: web, body }) => {
      await ack();
      await new Promise((r) => setTimeout(r, 250));
      errors.push(await platformError(web.views.open({ trigger_id: body.trigger_id, view: signup() })));
    });
    cleanups.push(() => app.stop());
    await app.start();
    emu.slash("/form", "", "U_ALICE");
    await waitFor(() => errors.length === 1);
    expect(errors).toEqual(["expired_trigger_id"]);
  });

  it("takes a trigger once: a second views.open with it is exchanged_trigger_id", async () => {
    const emu = await emulator();
    const web = client(emu);
    const id = trigger(emu);
    await web.views.open({ trigger_id: id, view: signup() });
    expect(await platformError(web.views.open({ trigger_id: id, view: signup() }))).toBe(
      "exchanged_trigger_id",
    );
    expect(emu.state.views.get("U_ALICE")).toHaveLength(1);
  });

  it("refuses a trigger it never handed out with invalid_trigger_id", async () => {
    const emu = await emulator();
    const answer = await call(emu, "views.open", { trigger_id: "12345.98765.abcd2358fdea", view: signup() });
    expect(answer).toMatchObject({ ok: false, error: "invalid_trigger_id" });
  });

  it("hands out triggers with clicks and submissions too, and sends link buttons' clicks", async () => {
    const emu = await emulator();
    const web = client(emu);
    const posted = await web.chat.postMessage({ channel: "C1", text: "docs" });
    const click = clickAction(emu, {
      user: "U_BOB",
      channel: "C1",
      messageTs: posted.ts ?? "",
      actionId: "docs",
      url: "https://example.com/docs",
    });
    expect((click.payload.actions as Record<string, unknown>[])[0]).toMatchObject({
      type: "button",
      action_id: "docs",
      url: "https://example.com/docs",
    });
    const opened = await web.views.open({ trigger_id: String(click.payload.trigger_id), view: signup() });
    expect(emu.openView("U_BOB")?.id).toBe(opened.view?.id);
  });
});

describe("Slack emulator: views are checked like Slack checks them", () => {
  /** The messages of a views.open with `view`, which must be refused. */
  async function refused(emu: SlackEmulator, view: Record<string, unknown>): Promise<string[]> {
    const answer = await call(emu, "views.open", { trigger_id: trigger(emu), view });
    expect(answer).toMatchObject({ ok: false, error: "invalid_arguments" });
    return answer.messages ?? [];
  }

  const withInput = (element: Record<string, unknown>) =>
    signup({ blocks: [{ type: "input", block_id: "b", label: text("Pick"), element }] });

  it("refuses a title over 24 characters, naming it, and leaves the trigger unused", async () => {
    const emu = await emulator();
    const id = trigger(emu);
    const long = await call(emu, "views.open", {
      trigger_id: id,
      view: signup({ title: text("x".repeat(25)) }),
    });
    expect(long).toMatchObject({ ok: false, error: "invalid_arguments" });
    expect(long.messages).toEqual([
      "[ERROR] must be less than 25 characters [json-pointer:/view/title/text]",
    ]);
    expect(emu.openView("U_ALICE")).toBeUndefined();
    expect((await call(emu, "views.open", { trigger_id: id, view: signup() })).ok).toBe(true);
  });

  it("refuses too many options: 11 checkboxes, 101 select options", async () => {
    const emu = await emulator();
    const many = (n: number) => Array.from({ length: n }, (_, i) => option(`o${i}`, `v${i}`));
    expect(await refused(emu, withInput({ type: "checkboxes", action_id: "c", options: many(11) }))).toEqual([
      "[ERROR] no more than 10 items allowed [json-pointer:/view/blocks/0/element/options]",
    ]);
    expect(
      await refused(emu, withInput({ type: "static_select", action_id: "s", options: many(101) })),
    ).toEqual(["[ERROR] no more than 100 items allowed [json-pointer:/view/blocks/0/element/options]"]);
    const ok = await call(emu, "views.open", {
      trigger_id: trigger(emu),
      view: withInput({ type: "static_select", action_id: "s", options: many(100) }),
    });
    expect(ok.ok).toBe(true);
  });

  it("refuses an initial_option that is not one of the options", async () => {
    const emu = await emulator();
    const element = {
      type: "radio_buttons",
      action_id: "r",
      options: sizes,
      initial_option: option("XL", "xl"),
    };
    expect(await refused(emu, withInput(element))).toEqual([
      "[ERROR] must match one of the provided options [json-pointer:/view/blocks/0/element/initial_option]",
    ]);
    const relabelled = { ...element, initial_option: option("Tiny", "s") };
    expect(await refused(emu, withInput(relabelled))).toHaveLength(1);
  });

  it("names every other broken rule with its place in the view", async () => {
    const emu = await emulator();
    const cases: [Record<string, unknown>, string][] = [
      [signup({ type: "home" }), "/view/type"],
      [signup({ title: undefined }), "missing required field: title [json-pointer:/view]"],
      [signup({ submit: text("s".repeat(25)) }), "/view/submit/text"],
      [signup({ close: { type: "mrkdwn", text: "Close" } }), "/view/close/type"],
      [signup({ submit: undefined }), "missing required field: submit"],
      [signup({ callback_id: "c".repeat(256) }), "/view/callback_id"],
      [signup({ private_metadata: "m".repeat(3001) }), "/view/private_metadata"],
      [signup({ blocks: Array.from({ length: 101 }, () => ({ type: "divider" })) }), "/view/blocks"],
      [signup({ blocks: [{ type: "markdown", text: "x" }] }), "/view/blocks/0/type"],
      [signup({ blocks: [{ type: "divider", block_id: "b".repeat(256) }] }), "/view/blocks/0/block_id"],
      [
        signup({
          blocks: [
            { type: "divider", block_id: "d" },
            { type: "header", block_id: "d", text: text("H") },
          ],
        }),
        "/view/blocks/1/block_id",
      ],
      [signup({ blocks: [{ type: "header", text: text("h".repeat(151)) }] }), "/view/blocks/0/text/text"],
      [
        signup({ blocks: [{ type: "section", text: { type: "mrkdwn", text: "s".repeat(3001) } }] }),
        "/view/blocks/0/text/text",
      ],
      [
        signup({
          blocks: [{ type: "input", label: text("l".repeat(2001)), element: { type: "url_text_input" } }],
        }),
        "/view/blocks/0/label/text",
      ],
      [
        signup({ blocks: [{ type: "input", element: { type: "url_text_input" } }] }),
        "missing required field: label [json-pointer:/view/blocks/0]",
      ],
      [withInput({ type: "button", text: text("Go") }), "/view/blocks/0/element/type"],
      [
        withInput({ type: "plain_text_input", action_id: "a".repeat(256) }),
        "/view/blocks/0/element/action_id",
      ],
      [withInput({ type: "plain_text_input", max_length: 3001 }), "/view/blocks/0/element/max_length"],
      [withInput({ type: "plain_text_input", min_length: -1 }), "/view/blocks/0/element/min_length"],
      [
        withInput({ type: "number_input", min_value: "1" }),
        "missing required field: is_decimal_allowed [json-pointer:/view/blocks/0/element]",
      ],
      [
        withInput({ type: "number_input", is_decimal_allowed: false, min_value: 1 }),
        "/view/blocks/0/element/min_value",
      ],
      [
        withInput({ type: "number_input", is_decimal_allowed: false, max_value: "2.5" }),
        "/view/blocks/0/element/max_value",
      ],
      [
        withInput({ type: "static_select", options: [option("o".repeat(76), "v")] }),
        "/view/blocks/0/element/options/0/text/text",
      ],
      [
        withInput({ type: "static_select", options: [option("o", "v".repeat(151))] }),
        "/view/blocks/0/element/options/0/value",
      ],
      [
        withInput({
          type: "multi_static_select",
          options: sizes,
          initial_options: [sizes[0], option("XL", "xl")],
        }),
        "/view/blocks/0/element/initial_options/1",
      ],
    ];
    // Each case names where the problem is, or the end of Slack's message when that says more.
    for (const [view, where] of cases) {
      const tail = where.startsWith("/") ? `[json-pointer:${where}]` : where;
      const messages = await refused(emu, view);
      expect(
        messages.some((m) => m.startsWith("[ERROR] ") && m.includes(tail)),
        `${where}: ${messages.join(" | ")}`,
      ).toBe(true);
    }
    expect(emu.state.viewsById.size).toBe(0);
  });

  it("takes every input element the brief lists, form-encoded as the WebClient sends it", async () => {
    const emu = await emulator();
    const elements = [
      { type: "plain_text_input", min_length: 0, max_length: 3000 },
      { type: "email_text_input" },
      { type: "url_text_input" },
      { type: "number_input", is_decimal_allowed: true, min_value: "0.5", max_value: "9.5" },
      { type: "datepicker", initial_date: "2026-01-31" },
      { type: "datetimepicker", initial_date_time: 1_767_225_600 },
      { type: "timepicker", initial_time: "09:30" },
      { type: "checkboxes", options: sizes, initial_options: [sizes[0]] },
      { type: "radio_buttons", options: sizes },
      { type: "static_select", option_groups: [{ label: text("All"), options: sizes }] },
      { type: "multi_static_select", options: sizes, max_selected_items: 2 },
      { type: "users_select" },
      { type: "multi_users_select" },
      { type: "conversations_select" },
      { type: "multi_conversations_select" },
      { type: "channels_select" },
      { type: "multi_channels_select" },
    ];
    const blocks = elements.map((e, i) => ({
      type: "input",
      block_id: `b${i}`,
      label: text(e.type),
      element: { ...e, action_id: `a${i}` },
    }));
    const opened = await client(emu).views.open({
      trigger_id: trigger(emu),
      view: signup({ blocks }) as never,
    });
    expect(opened.view?.blocks).toHaveLength(elements.length);
  });
});

describe("Slack emulator: view submissions", () => {
  it("submits the open view with Slack's state per element type", async () => {
    const emu = await emulator();
    const { submitted } = await formApp(emu);
    const elements: [Record<string, unknown>, unknown][] = [
      [{ type: "plain_text_input" }, "Ada"],
      [{ type: "email_text_input" }, "ada@example.com"],
      [{ type: "url_text_input" }, "https://example.com"],
      [{ type: "number_input", is_decimal_allowed: true }, 2.5],
      [{ type: "datepicker" }, "2026-03-01"],
      [{ type: "datetimepicker" }, 1_767_225_600],
      [{ type: "timepicker" }, "08:15"],
      [{ type: "checkboxes", options: sizes }, ["s", "l"]],
      [{ type: "radio_buttons", options: sizes }, "m"],
      [{ type: "static_select", options: sizes }, "l"],
      [{ type: "multi_static_select", options: sizes }, ["m"]],
      [{ type: "users_select" }, "U_BOB"],
    ];
    const blocks = elements.map(([e], i) => ({
      type: "input",
      block_id: `b${i}`,
      label: text(String(e.type)),
      element: { ...e, action_id: `a${i}` },
    }));
    await client(emu).views.open({ trigger_id: trigger(emu), view: signup({ blocks }) as never });
    const inputs = Object.fromEntries(elements.map(([, v], i) => [`a${i}`, v as never]));
    const { outcome } = submitView(emu, { user: "U_ALICE", inputs });
    expect(await outcome).toEqual({ action: "closed" });
    const emoji = (o: { text: { text: string }; value: string }) => ({
      ...o,
      text: { ...o.text, emoji: true },
    });
    const [s, m, l] = sizes.map(emoji);
    expect(submitted[0]).toEqual({
      b0: { a0: { type: "plain_text_input", value: "Ada" } },
      b1: { a1: { type: "email_text_input", value: "ada@example.com" } },
      b2: { a2: { type: "url_text_input", value: "https://example.com" } },
      b3: { a3: { type: "number_input", value: "2.5" } },
      b4: { a4: { type: "datepicker", selected_date: "2026-03-01" } },
      b5: { a5: { type: "datetimepicker", selected_date_time: 1_767_225_600 } },
      b6: { a6: { type: "timepicker", selected_time: "08:15" } },
      b7: { a7: { type: "checkboxes", selected_options: [s, l] } },
      b8: { a8: { type: "radio_buttons", selected_option: m } },
      b9: { a9: { type: "static_select", selected_option: l } },
      b10: { a10: { type: "multi_static_select", selected_options: [m] } },
      b11: { a11: { type: "users_select", selected_user: "U_BOB" } },
    });
  });

  it("keeps the view open with the app's errors, and closes it on a plain ack", async () => {
    const emu = await emulator();
    let answer: ViewResponseAction | undefined = {
      response_action: "errors",
      errors: { email: "Use your work address" },
    };
    const { submitted } = await formApp(emu, () => answer);
    const open = await openSignup(emu);
    const first = submitView(emu, { user: "U_ALICE", inputs: { email: "ada@gmail.com" } });
    expect(first.payload.view).toMatchObject({
      id: open.id,
      callback_id: "signup",
      private_metadata: "from C1",
    });
    expect(await first.outcome).toEqual({ action: "errors", errors: { email: "Use your work address" } });
    expect(emu.openView("U_ALICE")).toMatchObject({
      id: open.id,
      open: true,
      errors: { email: "Use your work address" },
    });
    // The initial option was sent as chosen; the note left empty is null.
    expect(submitted[0]).toMatchObject({
      size: { size: { selected_option: { value: "m" } } },
      note: { note: { type: "plain_text_input", value: null } },
    });

    answer = undefined;
    const second = submitView(emu, { user: "U_ALICE", inputs: { email: "ada@example.com" } });
    expect(await second.outcome).toEqual({ action: "closed" });
    expect(emu.openView("U_ALICE")).toBeUndefined();
    expect(emu.state.viewsById.get(open.id)?.open).toBe(false);
  });

  it("fails an errors ack that names a block the view does not have, keeping the view as it was", async () => {
    const emu = await emulator();
    await formApp(emu, () => ({ response_action: "errors", errors: { mail: "Wrong" } }));
    await openSignup(emu);
    const { outcome } = submitView(emu, { user: "U_ALICE", inputs: { email: "ada@example.com" } });
    expect(await outcome).toEqual({ action: "failed", error: "invalid_response_action" });
    expect(emu.openView("U_ALICE")).toMatchObject({
      open: true,
      errors: {},
      submitError: "invalid_response_action",
    });
  });

  it("replaces the view on response_action update, and refuses a broken replacement", async () => {
    const emu = await emulator();
    let next: Record<string, unknown> = signup({ title: text("Thanks!"), blocks: [] });
    await formApp(emu, () => ({ response_action: "update", view: next as never }));
    const open = await openSignup(emu);
    const hash = open.view.hash;
    expect(await submitView(emu, { user: "U_ALICE", inputs: { email: "a@b.co" } }).outcome).toMatchObject({
      action: "updated",
    });
    const now = emu.openView("U_ALICE");
    expect(now).toMatchObject({ id: open.id, view: { title: { text: "Thanks!" } } });
    expect(now?.view.hash).not.toBe(hash);
    expect(now?.versions.map((v) => v.title.text)).toEqual(["Sign up"]);

    next = signup({ title: text("t".repeat(30)) });
    await client(emu).views.open({ trigger_id: trigger(emu), view: signup() });
    const failed = await submitView(emu, { user: "U_ALICE", inputs: { email: "a@b.co" } }).outcome;
    expect(failed).toMatchObject({ action: "failed", error: "invalid_arguments" });
    expect(emu.openView("U_ALICE")?.view.title.text).toBe("Sign up");
  });

  it("refuses what Slack's client would not send: a required input left empty, an option not offered", async () => {
    const emu = await emulator();
    await formApp(emu);
    await openSignup(emu);
    expect(() => submitView(emu, { user: "U_ALICE", inputs: {} })).toThrow(/"Email" is required/);
    expect(() => submitView(emu, { user: "U_ALICE", inputs: { email: "nope" } })).toThrow(/not an email/);
    expect(() => submitView(emu, { user: "U_ALICE", inputs: { email: "a@b.co", size: "xl" } })).toThrow(
      /no option with value "xl"/,
    );
    expect(emu.delivery.deliveries.filter((d) => d.payload.type === "view_submission")).toHaveLength(0);
  });
});

describe("Slack emulator: views.update and views.push", () => {
  it("updates a view by id, refusing a stale hash with hash_conflict and an unknown view with not_found", async () => {
    const emu = await emulator();
    const web = client(emu);
    const opened = await web.views.open({ trigger_id: trigger(emu), view: signup() });
    const view_id = opened.view?.id ?? "";
    const hash = opened.view?.hash ?? "";
    const updated = await web.views.update({ view_id, hash, view: signup({ title: text("Step 2") }) });
    expect(updated.view?.id).toBe(view_id);
    // The hash of the first version is stale now.
    expect(await platformError(web.views.update({ view_id, hash, view: signup() }))).toBe("hash_conflict");
    expect(await platformError(web.views.update({ view_id: "VNOPE", view: signup() }))).toBe("not_found");
    expect(emu.openView("U_ALICE")?.view.title.text).toBe("Step 2");
    // Without a hash the last writer wins.
    await web.views.update({ view_id, view: signup({ title: text("Step 3") }) });
    expect(emu.openView("U_ALICE")?.view.title.text).toBe("Step 3");
  });

  it("stacks pushed views up to three and shows the one below after a plain ack", async () => {
    const emu = await emulator();
    await formApp(emu);
    const root = await openSignup(emu);
    const web = client(emu);
    const pushed = await web.views.push({ trigger_id: trigger(emu), view: signup({ title: text("Two") }) });
    await web.views.push({ trigger_id: trigger(emu), view: signup({ title: text("Three") }) });
    expect(await platformError(web.views.push({ trigger_id: trigger(emu), view: signup() }))).toBe(
      "push_limit_reached",
    );
    expect(emu.state.views.get("U_ALICE")?.map((v) => v.view.title.text)).toEqual([
      "Sign up",
      "Two",
      "Three",
    ]);
    expect(pushed.view).toMatchObject({ root_view_id: root.id, previous_view_id: root.id });
    expect(await submitView(emu, { user: "U_ALICE", inputs: { email: "a@b.co" } }).outcome).toEqual({
      action: "closed",
    });
    expect(emu.openView("U_ALICE")?.view.title.text).toBe("Two");
    // Nobody has a modal open to push onto.
    expect(await platformError(web.views.push({ trigger_id: trigger(emu, "U_BOB"), view: signup() }))).toBe(
      "not_found",
    );
  });
});
