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

describe("Discord emulator: what an interaction's webhook may write", () => {
  const cb = (rec: { id: string; token: string }) => `/interactions/${rec.id}/${rec.token}/callback`;

  it("edits, reads and deletes only the messages its own token sent, as a webhook does", async () => {
    const e = await start();
    const s = e.state;
    const first = e.slash("ask", { question: "one" }, s.general, s.alice.id);
    const second = e.slash("ask", { question: "two" }, s.general, s.alice.id);
    for (const rec of [first, second]) await call(e, "POST", cb(rec), { json: { type: 5 }, bot: false });
    const hook = `/webhooks/${s.applicationId}/${first.token}`;
    const followup = await call(e, "POST", hook, { json: { content: "more" }, bot: false });
    const posted = await call(e, "POST", `/channels/${s.general}/messages`, { json: { content: "plain" } });
    const own = [first.originalId!, String(followup.body.id)];
    for (const id of own) {
      expect(
        await call(e, "PATCH", `${hook}/messages/${id}`, { json: { content: "mine" }, bot: false }),
      ).toMatchObject({ status: 200, body: { content: "mine" } });
    }
    const unknown = { status: 404, code: 10008 };
    for (const id of [String(posted.body.id), second.originalId!]) {
      expect(
        await call(e, "PATCH", `${hook}/messages/${id}`, { json: { content: "not mine" }, bot: false }),
      ).toMatchObject(unknown);
      expect(await call(e, "GET", `${hook}/messages/${id}`, { bot: false })).toMatchObject(unknown);
      expect(await call(e, "DELETE", `${hook}/messages/${id}`, { bot: false })).toMatchObject(unknown);
      expect(s.findMessage(id)?.deleted).toBeFalsy();
    }
    expect(s.findMessage(String(posted.body.id))?.content).toBe("plain");
  });

  it("caps follow-ups at 5 for an interaction a user install alone authorized, and not for a server install", async () => {
    const e = await start();
    const s = e.state;
    const followups = async (rec: { id: string; token: string }) => {
      await call(e, "POST", cb(rec), { json: { type: 5 }, bot: false });
      const statuses: { status: number; code?: number }[] = [];
      for (let n = 0; n < 7; n++) {
        const r = await call(e, "POST", `/webhooks/${s.applicationId}/${rec.token}`, {
          json: { content: `part ${n}` },
          bot: false,
        });
        statuses.push({ status: r.status, ...(r.code ? { code: r.code } : {}) });
      }
      return statuses;
    };
    const ok = { status: 200 };
    const inGuild = e.slash("ask", { question: "long" }, s.general, s.alice.id);
    expect(inGuild.owners).toEqual({ "0": s.guildId });
    const inDm = e.slash("ask", { question: "long" }, s.dmChannel(s.alice.id).id, s.alice.id);
    expect(inDm.owners).toEqual({ "0": "0" });
    for (const rec of [inGuild, inDm]) expect(await followups(rec)).toEqual(Array(7).fill(ok));
    s.installs = { guild: false, user: true };
    const userOnly = e.slash("ask", { question: "long" }, s.general, s.alice.id);
    expect(userOnly.owners).toEqual({ "1": s.alice.id });
    const capped = { status: 400, code: 40094 };
    expect(await followups(userOnly)).toEqual([...Array(5).fill(ok), capped, capped]);
    expect(userOnly.followupIds).toHaveLength(5);
    s.installs = { guild: true, user: true };
    const both = e.slash("ask", { question: "long" }, s.general, s.alice.id);
    expect(await followups(both)).toEqual(Array(7).fill(ok));
  });

  it("refuses autocomplete choices past 25, or with a name or string value outside 1-100 characters, and records none", async () => {
    const e = await start();
    const s = e.state;
    const choices = (n: number, name = (i: number) => `m${i}`) =>
      Array.from({ length: n }, (_, i) => ({ name: name(i), value: `m${i}` }));
    const offer = async (list: unknown[]) => {
      const rec = e.autocomplete("model", { name: "" }, "name", s.general, s.alice.id);
      const r = await call(e, "POST", cb(rec), { json: { type: 8, data: { choices: list } }, bot: false });
      return { r, rec };
    };
    const refused = (field: string) => ({
      status: 400,
      code: 50035,
      body: { errors: { [field]: { _errors: [expect.objectContaining({})] } } },
    });
    const accepted = await offer([...choices(24), { name: "x".repeat(100), value: 7 }]);
    expect(accepted.r.status).toBe(204);
    expect(accepted.rec.choices).toHaveLength(25);
    const tooMany = await offer(choices(26));
    expect(tooMany.r).toMatchObject(refused("data.choices"));
    expect(tooMany.rec.callbacks).toEqual([]);
    expect(tooMany.rec.choices).toBeUndefined();
    const longName = await offer(choices(3, (i) => (i === 2 ? "n".repeat(101) : `m${i}`)));
    expect(longName.r).toMatchObject(refused("data.choices.2.name"));
    expect((await offer([{ name: "", value: "a" }])).r).toMatchObject(refused("data.choices.0.name"));
    const longValue = await offer([{ name: "long", value: "v".repeat(101) }]);
    expect(longValue.r).toMatchObject(refused("data.choices.0.value"));
    expect(longValue.rec.callbacks).toEqual([]);
  });
});

describe("Discord emulator: a private channel, where the app has no bot", () => {
  it("lets only the user install authorize a command there, refuses the bot, and takes the webhook's messages", async () => {
    const e = await start();
    const s = e.state;
    s.installs = { guild: true, user: true };
    const group = e.privateChannel(s.alice, s.bob);
    const rec = e.slash("ask", { question: "here?" }, group.id, s.alice.id);
    expect(rec.owners).toEqual({ "1": s.alice.id });
    const missing = { status: 403, code: 50001 };
    expect(
      await call(e, "POST", `/channels/${group.id}/messages`, { json: { content: "bot" } }),
    ).toMatchObject(missing);
    expect(await call(e, "GET", `/channels/${group.id}`)).toMatchObject(missing);
    await call(e, "POST", `/interactions/${rec.id}/${rec.token}/callback`, { json: { type: 5 }, bot: false });
    const hook = `/webhooks/${s.applicationId}/${rec.token}`;
    for (let n = 0; n < 5; n++) {
      expect((await call(e, "POST", hook, { json: { content: `part ${n}` }, bot: false })).status).toBe(200);
    }
    expect(await call(e, "POST", hook, { json: { content: "one more" }, bot: false })).toMatchObject({
      status: 400,
      code: 40094,
    });
    expect(e.botMessages(group.id).map((m) => m.content)).toEqual([
      "",
      "part 0",
      "part 1",
      "part 2",
      "part 3",
      "part 4",
    ]);
    s.installs = { guild: true, user: false };
    expect(() => e.slash("ask", { question: "here?" }, group.id, s.alice.id)).toThrow(/No install/);
  });
});
