import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { messagesTokens } from "../../src/agent/context.js";
import { compressThreshold } from "../../src/agent/memory.js";
import { modelLimits } from "../../src/agent/model-limits.js";
import {
  CHAT_MODEL,
  conversationalModel,
  KEY,
  MemoryHarness,
  receivedMessages,
  receivedTokens,
  toolResultsFollowCalls,
} from "./memory.harness.js";

const TURNS = 200;

describe("a 200-turn conversation with tool calls, through the agent", () => {
  let h: MemoryHarness;
  const model = conversationalModel();
  /** Per turn: the summary and messages the session had before the turn, and the requests it made. */
  const turns: Array<{
    summary?: string;
    before: ReturnType<typeof receivedMessages>;
    first: number;
    last: number;
  }> = [];

  beforeAll(async () => {
    h = await MemoryHarness.start({}, model.responder);
    for (let i = 1; i <= TURNS; i++) {
      const summary = h.session.summary;
      const first = h.emu.requests.length;
      const out = await h.turn(`Turn ${i}: what is next for the release?`);
      expect(out.events.some((e) => e.type === "error")).toBe(false);
      turns.push({ summary, before: out.before, first, last: h.emu.requests.length });
    }
  }, 240_000);
  afterAll(() => h.close());

  const budget = () => {
    const limits = modelLimits(h.config, CHAT_MODEL);
    return limits.contextWindow - limits.maxOutputTokens;
  };

  it("keeps every prompt sent under the model's input budget", () => {
    const chat = h.chatRequests();
    expect(chat.length).toBeGreaterThan(TURNS);
    const sizes = chat.map(receivedTokens);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(budget());
  });

  it("compressed many times and keeps the active record bounded", () => {
    expect(model.stats.summaries).toBeGreaterThan(5);
    expect(h.session.archiveChunks).toBe(model.stats.summaries);
    expect(h.session.archivedCount + h.session.messages.length).toBeGreaterThan(TURNS * 2);
    expect(messagesTokens(h.session.messages)).toBeLessThanOrEqual(
      compressThreshold(h.config, modelLimits(h.config, CHAT_MODEL)),
    );
  });

  it("puts the current summary into every prompt once there is one", () => {
    let withSummary = 0;
    for (const t of turns) {
      const req = h.emu.requests[t.first];
      if (!t.summary) continue;
      withSummary++;
      expect(req?.system).toContain(t.summary);
    }
    expect(withSummary).toBeGreaterThan(TURNS / 2);
    expect(h.chatRequests().at(-1)?.system).toContain(`ROLLING-SUMMARY-${model.stats.summaries}`);
  });

  it("never sends a tool result without the call it answers", () => {
    for (const req of h.chatRequests()) {
      const messages = receivedMessages(req);
      expect(messages[0]?.role).not.toBe("tool");
      expect(toolResultsFollowCalls(messages)).toBe(true);
    }
    expect(h.hub.calls.length).toBe(TURNS / 5);
  });

  it("sends the newest messages intact, with the current message last", () => {
    turns.forEach((t, i) => {
      const req = h.emu.requests[t.first];
      if (!req) throw new Error(`turn ${i + 1} sent no request`);
      const sent = receivedMessages(req);
      expect(sent.at(-1)?.content).toBe(`[ana] Turn ${i + 1}: what is next for the release?`);
      const newest = t.before
        .slice(-4)
        .map((m) => (m.role === "user" ? { ...m, content: `[ana] ${m.content}` } : m));
      const tail = sent.slice(-1 - newest.length, -1);
      expect(tail.map((m) => [m.role, m.content])).toEqual(newest.map((m) => [m.role, m.content]));
    });
  });

  it("archives every folded message in order, so the whole thread can be read back", async () => {
    const archive = await h.sessions.readArchive(KEY);
    const all = [...archive, ...h.session.messages];
    const asked = all.filter((m) => m.role === "user").map((m) => m.content);
    expect(asked).toEqual(
      Array.from({ length: TURNS }, (_, i) => `Turn ${i + 1}: what is next for the release?`),
    );
  });
});

describe("a restart in the middle of a long conversation", () => {
  let h: MemoryHarness;
  beforeAll(async () => {
    h = await MemoryHarness.start();
  });
  afterAll(() => h.close());

  it("keeps the summary, the archive and the title", async () => {
    for (let i = 1; i <= 40; i++) await h.turn(`Turn ${i}: what is next for the release?`);
    const before = structuredClone(h.session);
    const archive = await h.sessions.readArchive(KEY);
    expect(before.summary).toMatch(/ROLLING-SUMMARY/);
    expect(before.title).toBe("Release planning notes");
    expect(archive.length).toBeGreaterThan(0);

    await h.restart();
    expect(h.session).toEqual(before);
    expect(await h.sessions.readArchive(KEY)).toEqual(archive);

    const out = await h.turn("Turn 41: what is next for the release?");
    expect(out.events.map((e) => e.type)).not.toContain("title");
    const req = h.chatRequests().at(-1);
    expect(req?.system).toContain(before.summary);
    expect(h.session.title).toBe("Release planning notes");
  });
});
