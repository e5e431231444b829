import { afterEach, describe, expect, it } from "vitest";
import { DiscordEmulator, type DiscordEmulatorOptions } from "./index.js";

let emulator: DiscordEmulator | undefined;

afterEach(async () => {
  await emulator?.stop();
  emulator = undefined;
});

async function start(opts: DiscordEmulatorOptions = {}): Promise<DiscordEmulator> {
  emulator = await DiscordEmulator.start(opts);
  return emulator;
}

/** A raw request, as Discord answers it: the status and Discord's error code, if any. */
async function call(
  e: DiscordEmulator,
  method: string,
  route: string,
  opts: { json?: unknown; bot?: boolean } = {},
): Promise<{ status: number; code?: number; body: Record<string, unknown> }> {
  const res = await fetch(`${e.apiUrl}/v10${route}`, {
    method,
    headers: {
      ...(opts.bot === false ? {} : { authorization: `Bot ${e.token}` }),
      ...(opts.json === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(opts.json === undefined ? {} : { body: JSON.stringify(opts.json) }),
  });
  const text = await res.text();
  const body = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
  return { status: res.status, ...(typeof body.code === "number" ? { code: body.code } : {}), body };
}

const EPHEMERAL = 64;

describe("Discord emulator: an interaction's messages", () => {
  it("knows an ephemeral reply only on the interaction's webhook, not on the channel's routes", async () => {
    const e = await start();
    const s = e.state;
    const rec = e.slash("ask", { question: "private?" }, s.general, s.alice.id);
    const reply = { type: 4, data: { content: "for alice alone", flags: EPHEMERAL } };
    expect(
      (await call(e, "POST", `/interactions/${rec.id}/${rec.token}/callback`, { json: reply, bot: false }))
        .status,
    ).toBe(204);
    const id = rec.originalId!;
    const unknown = { status: 404, code: 10008 };
    expect(await call(e, "GET", `/channels/${s.general}/messages/${id}`)).toMatchObject(unknown);
    expect(
      await call(e, "PATCH", `/channels/${s.general}/messages/${id}`, { json: { content: "x" } }),
    ).toMatchObject(unknown);
    expect(await call(e, "DELETE", `/channels/${s.general}/messages/${id}`)).toMatchObject(unknown);
    expect(s.findMessage(id)?.content).toBe("for alice alone");
    const hook = `/webhooks/${s.applicationId}/${rec.token}/messages/@original`;
    expect(await call(e, "PATCH", hook, { json: { content: "still alice's" }, bot: false })).toMatchObject({
      status: 200,
    });
    expect(s.findMessage(id)?.content).toBe("still alice's");
  });

  it("names the deferral's message in a with_response answer, and sends the message itself only for a reply", async () => {
    const e = await start();
    const s = e.state;
    const deferred = e.slash("ask", { question: "slow?" }, s.general, s.alice.id);
    const cb = (rec: typeof deferred) => `/interactions/${rec.id}/${rec.token}/callback?with_response=true`;
    const later = await call(e, "POST", cb(deferred), { json: { type: 5 }, bot: false });
    expect(later).toMatchObject({
      status: 200,
      body: {
        interaction: { response_message_id: deferred.originalId, response_message_loading: true },
        resource: { type: 5 },
      },
    });
    expect((later.body.resource as Record<string, unknown>).message).toBeUndefined();
    const replied = e.slash("ask", { question: "quick?" }, s.general, s.alice.id);
    const now = await call(e, "POST", cb(replied), {
      json: { type: 4, data: { content: "Yes." } },
      bot: false,
    });
    expect(now.body).toMatchObject({
      interaction: { response_message_id: replied.originalId, response_message_loading: false },
      resource: { type: 4, message: { id: replied.originalId, content: "Yes." } },
    });
  });

  it("refuses every webhook route once the token is 15 minutes old, while the channel's routes still edit a public reply", async () => {
    const e = await start();
    const s = e.state;
    const rec = e.slash("ask", { question: "long?" }, s.general, s.alice.id);
    await call(e, "POST", `/interactions/${rec.id}/${rec.token}/callback`, { json: { type: 5 }, bot: false });
    const hook = `/webhooks/${s.applicationId}/${rec.token}`;
    const original = `${hook}/messages/@original`;
    expect(await call(e, "PATCH", original, { json: { content: "working" }, bot: false })).toMatchObject({
      status: 200,
    });
    s.ageInteraction(rec.id, 15 * 60_000 - 10_000);
    expect(await call(e, "GET", original, { bot: false })).toMatchObject({ status: 200 });
    s.ageInteraction(rec.id, 10_001);
    const expired = { status: 401, code: 50027 };
    expect(
      await call(e, "PATCH", `${hook}/messages/@original`, { json: { content: "done" }, bot: false }),
    ).toMatchObject(expired);
    expect(await call(e, "GET", `${hook}/messages/@original`, { bot: false })).toMatchObject(expired);
    expect(await call(e, "POST", hook, { json: { content: "more" }, bot: false })).toMatchObject(expired);
    expect(await call(e, "DELETE", `${hook}/messages/@original`, { bot: false })).toMatchObject(expired);
    const edited = await call(e, "PATCH", `/channels/${s.general}/messages/${rec.originalId}`, {
      json: { content: "done, through the channel" },
    });
    expect(edited).toMatchObject({ status: 200, body: { content: "done, through the channel" } });
    expect(rec.followupIds).toEqual([]);
  });
});
