import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DiscordEmulator } from "./index.js";

let e: DiscordEmulator;

beforeEach(async () => {
  e = await DiscordEmulator.start();
});

afterEach(async () => {
  await e.stop();
});

/** A raw request, as a naive client would send it: the status and Discord's error code, if any. */
async function call(
  method: string,
  route: string,
  json: unknown,
  opts: { bot?: boolean } = {},
): Promise<{ status: number; code?: number; body: Record<string, unknown> }> {
  const res = await fetch(`${e.apiUrl}/v10${route}`, {
    method,
    headers: {
      ...(opts.bot === false ? {} : { authorization: `Bot ${e.token}` }),
      "content-type": "application/json",
    },
    body: JSON.stringify(json),
  });
  const text = await res.text();
  const body = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
  return { status: res.status, ...(typeof body.code === "number" ? { code: body.code } : {}), body };
}

const EMPTY = { status: 400, code: 50006, body: { message: "Cannot send an empty message", code: 50006 } };
const STOP = { type: 1, components: [{ type: 2, style: 4, label: "Stop", custom_id: "sb:r:stop" }] };

describe("Discord emulator: an edit that would leave a message empty", () => {
  it("is refused on a channel's message route, whitespace counting as empty, and the message keeps its text", async () => {
    const channel = e.state.general;
    const posted = await call("POST", `/channels/${channel}/messages`, { content: "-# Calling echo…" });
    const id = String(posted.body.id);
    const edit = (json: unknown) => call("PATCH", `/channels/${channel}/messages/${id}`, json);
    expect(await edit({ content: "\n\n" })).toEqual(EMPTY);
    expect(await edit({ content: "" })).toEqual(EMPTY);
    expect(e.state.findMessage(id)?.content).toBe("-# Calling echo…");
    expect(e.state.findMessage(id)?.edits).toEqual([]);
    expect((await edit({ content: "The answer." })).status).toBe(200);
  });

  it("counts buttons as content: an edit may empty the text of a message that keeps them, not take both", async () => {
    const channel = e.state.general;
    const posted = await call("POST", `/channels/${channel}/messages`, {
      content: "Working…",
      components: [STOP],
    });
    const id = String(posted.body.id);
    const edit = (json: unknown) => call("PATCH", `/channels/${channel}/messages/${id}`, json);
    expect((await edit({ content: " " })).status).toBe(200);
    expect(await edit({ components: [] })).toEqual(EMPTY);
    expect(e.state.findMessage(id)?.components).toEqual([STOP]);
    expect((await edit({ content: "Done.", components: [] })).status).toBe(200);
  });

  it("is refused on the interaction webhook's @original and follow-up routes", async () => {
    const s = e.state;
    const rec = e.slash("ask", { question: "hi" }, s.general, s.alice.id);
    const reply = { type: 4, data: { content: "-# Calling echo…" } };
    expect(
      (await call("POST", `/interactions/${rec.id}/${rec.token}/callback`, reply, { bot: false })).status,
    ).toBe(204);
    const hook = `/webhooks/${s.applicationId}/${rec.token}`;
    expect(await call("PATCH", `${hook}/messages/@original`, { content: "\n\n" }, { bot: false })).toEqual(
      EMPTY,
    );
    expect(s.findMessage(rec.originalId!)?.content).toBe("-# Calling echo…");
    const followUp = await call("POST", hook, { content: "More." }, { bot: false });
    expect(followUp.status).toBe(200);
    const route = `${hook}/messages/${String(followUp.body.id)}`;
    expect(await call("PATCH", route, { content: "\t" }, { bot: false })).toEqual(EMPTY);
    expect((await call("PATCH", route, { content: "Still more." }, { bot: false })).status).toBe(200);
  });

  it("refuses to fill a deferred reply with whitespace alone", async () => {
    const s = e.state;
    const rec = e.slash("ask", { question: "hi" }, s.general, s.alice.id);
    await call("POST", `/interactions/${rec.id}/${rec.token}/callback`, { type: 5 }, { bot: false });
    const original = `/webhooks/${s.applicationId}/${rec.token}/messages/@original`;
    expect(await call("PATCH", original, { content: "\n" }, { bot: false })).toEqual(EMPTY);
    expect((await call("PATCH", original, { content: "Here." }, { bot: false })).status).toBe(200);
  });
});
