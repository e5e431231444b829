import { afterEach, describe, expect, it } from "vitest";
import { needsCompression } from "../../src/agent/memory.js";
import { modelLimits } from "../../src/agent/model-limits.js";
import { fallbackTitle } from "../../src/agent/title.js";
import type { RecordedRequest, ScriptedTurn } from "../emulators/llm/index.js";
import { CHAT_MODEL, conversationalModel, KEY, kindOf, MemoryHarness } from "./memory.harness.js";

let h: MemoryHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** The conversational model, with title or summary requests answered by `override` instead. */
function withOverride(kind: "title" | "summary", override: () => ScriptedTurn) {
  const base = conversationalModel().responder;
  return (req: RecordedRequest) => (kindOf(req) === kind ? override() : base(req));
}

describe("thread titles", () => {
  it("makes the title once, after the first reply, cleaned, and stores it", async () => {
    h = await MemoryHarness.start();
    const first = await h.turn("Turn 1: can we plan the 2.0 release?");
    expect(first.title).toBe("Release planning notes");

    for (let i = 2; i <= 4; i++) {
      const next = await h.turn(`Turn ${i}: and then?`);
      expect(next.title).toBeUndefined();
    }
    expect(h.emu.requests.filter((r) => kindOf(r) === "title")).toHaveLength(1);
    expect((await h.sessions.get(KEY))?.title).toBe("Release planning notes");
  });

  it("titles the thread from its first exchange", async () => {
    h = await MemoryHarness.start();
    await h.turn("Turn 1: can we plan the 2.0 release?");
    const req = h.emu.requests.find((r) => kindOf(r) === "title");
    const sent = JSON.stringify(req?.messages);
    expect(sent).toContain("can we plan the 2.0 release?");
    expect(sent).toContain("Answer 1:");
  });

  it("falls back to the first words of the first message when the title model fails", async () => {
    h = await MemoryHarness.start(
      {},
      withOverride("title", () => ({ error: { status: 500 } })),
    );
    const out = await h.turn("Turn 1: can we plan the 2.0 release next week?");
    expect(out.text).toContain("Answer 1:");
    const expected = fallbackTitle("Turn 1: can we plan the 2.0 release next week?");
    expect(expected).toBe("Turn 1: can we plan the");
    expect(out.title).toBe(expected);
    expect((await h.sessions.get(KEY))?.title).toBe(expected);
  });
});

describe("compression failure", () => {
  it("delivers the reply and leaves the session unchanged, then compresses on a later turn", async () => {
    let failing = true;
    const base = conversationalModel().responder;
    h = await MemoryHarness.start({}, (req) =>
      kindOf(req) === "summary" && failing ? { error: { status: 500 } } : base(req),
    );
    const limits = modelLimits(h.config, CHAT_MODEL);
    let turn = 0;
    while (!needsCompression(h.session, h.config, limits)) await h.turn(`Turn ${++turn}: tell me more`);
    const before = structuredClone(h.session);

    const out = await h.turn(`Turn ${++turn}: tell me more`);
    expect(out.events.map((e) => e.type)).toContain("done");
    expect(out.events.map((e) => e.type)).not.toContain("error");
    expect(out.text).toContain(`Answer ${turn}:`);
    expect(h.emu.requests.at(-1) && kindOf(h.emu.requests.at(-1) as RecordedRequest)).toBe("summary");
    expect(h.session.summary).toBeUndefined();
    expect(h.session.archivedCount).toBe(0);
    expect(h.session.messages.slice(0, before.messages.length)).toEqual(before.messages);
    expect(h.session.messages.length).toBe(before.messages.length + 2);
    expect(await h.sessions.get(KEY)).toEqual(h.session);
    expect(await h.sessions.readArchive(KEY)).toEqual([]);

    failing = false;
    await h.turn(`Turn ${++turn}: tell me more`);
    expect(h.session.summary).toMatch(/ROLLING-SUMMARY/);
    expect(h.session.archivedCount).toBeGreaterThan(0);
  });
});

describe("system prompt templates", () => {
  const channelPrompts = [
    {
      platform: "console",
      channel: "ops",
      prompt:
        "Ops helper for {{user}} on {{platform}}/{{channel}}, model {{model}}, time {{time}}, reply in {{lang}}.",
    },
  ];

  it("fills the template variables in the channel's own prompt", async () => {
    h = await MemoryHarness.start({ agent: { systemPrompt: "Global prompt for {{user}}.", channelPrompts } });
    await h.turn("Turn 1: status?", { channel: "ops", user: "ana" });
    const system = h.chatRequests().at(-1)?.system ?? "";
    expect(system).toMatch(
      /^Ops helper for ana on console\/ops, model gpt-4o-mini, time \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d, reply in the user's language\./,
    );
  });

  it("uses the global prompt in other channels, and the built-in default without one", async () => {
    h = await MemoryHarness.start({ agent: { systemPrompt: "Global prompt for {{user}}.", channelPrompts } });
    await h.turn("Turn 1: status?", { channel: "general", user: "bo" });
    expect(h.chatRequests().at(-1)?.system).toMatch(/^Global prompt for bo\./);
    await h.close();

    h = await MemoryHarness.start();
    await h.turn("Turn 1: status?", { channel: "general", user: "bo" });
    const system = h.chatRequests().at(-1)?.system ?? "";
    expect(system).toContain("talking with bo");
    expect(system).toContain("Answer in the user's language.");
    expect(system).toContain("Model: gpt-4o-mini");
  });
});
