import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { questionMessage } from "../../../src/adapters/discord/reply.js";
import { DiscordEmulator } from "./index.js";

let e: DiscordEmulator;

beforeEach(async () => {
  e = await DiscordEmulator.start();
});

afterEach(async () => {
  await e.stop();
});

/** A raw post of one button, as a naive client would send it: the status and the error of its field. */
async function postButton(button: Record<string, unknown>): Promise<{ status: number; error?: unknown }> {
  const res = await fetch(`${e.apiUrl}/v10/channels/${e.state.general}/messages`, {
    method: "POST",
    headers: { authorization: `Bot ${e.token}`, "content-type": "application/json" },
    body: JSON.stringify({ content: "Sign in here.", components: [{ type: 1, components: [button] }] }),
  });
  const body = (await res.json()) as { errors?: Record<string, { _errors: unknown[] }> };
  const [field, detail] = Object.entries(body.errors ?? {})[0] ?? [];
  return { status: res.status, ...(field ? { error: { field, ...(detail?._errors[0] as object) } } : {}) };
}

const at = "components.0.components.0";
const link = (fields: Record<string, unknown>) => ({ type: 2, style: 5, label: "Sign in", ...fields });

describe("Discord emulator: link buttons (style 5)", () => {
  it("takes a link button with a url of up to 512 characters and no custom id", async () => {
    expect(await postButton(link({ url: "https://auth.example/start" }))).toEqual({ status: 200 });
    const url = `https://auth.example/?${"a".repeat(512 - 22)}`;
    expect(url).toHaveLength(512);
    expect(await postButton(link({ url }))).toEqual({ status: 200 });
  });

  it("refuses one without a url, with a longer one, or with a scheme Discord does not open", async () => {
    expect(await postButton(link({}))).toEqual({
      status: 400,
      error: { field: `${at}.url`, code: "BUTTON_COMPONENT_URL_REQUIRED", message: "A url is required" },
    });
    expect(await postButton(link({ url: `https://auth.example/?${"a".repeat(491)}` }))).toEqual({
      status: 400,
      error: { field: `${at}.url`, code: "BASE_TYPE_MAX_LENGTH", message: "Must be 512 or fewer in length." },
    });
    expect((await postButton(link({ url: "javascript:alert(1)" }))).status).toBe(400);
  });

  it("refuses a custom id on a link button, and a url on any other button", async () => {
    expect(await postButton(link({ url: "https://auth.example/", custom_id: "sb:r:open" }))).toMatchObject({
      status: 400,
      error: { field: `${at}.custom_id`, code: "BUTTON_COMPONENT_LINK_HAS_CUSTOM_ID" },
    });
    const primary = {
      type: 2,
      style: 1,
      label: "Open",
      custom_id: "sb:r:open",
      url: "https://auth.example/",
    };
    expect(await postButton(primary)).toMatchObject({ status: 400, error: { field: `${at}.url` } });
    expect(e.botMessages(e.state.general)).toHaveLength(0);
  });

  it("takes what the bot makes of a page to open: a link button, or the link in the text when it is past 512", async () => {
    for (const url of [
      "https://login.example.com/authorize?state=abc",
      `https://login.example.com/${"p".repeat(600)}`,
    ]) {
      const { text, components } = questionMessage({
        ref: "r1",
        text: "🔗 **crm** asks alice to open a page.",
        choices: [
          { value: "open", label: "Open login.example.com", style: "primary", url },
          { value: "cancel", label: "Cancel" },
        ],
      });
      const res = await fetch(`${e.apiUrl}/v10/channels/${e.state.general}/messages`, {
        method: "POST",
        headers: { authorization: `Bot ${e.token}`, "content-type": "application/json" },
        body: JSON.stringify({ content: text, components }),
      });
      expect(res.status).toBe(200);
    }
  });
});
