import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { LlmEmulator, o200kTokens } from "../../test/emulators/llm/index.js";
import { configSchema } from "../config.js";
import type { AssistantMessage, ChatMessage, ToolMessage, UserMessage } from "../core/messages.js";
import { type Session, SessionRepository } from "../store/sessions.js";
import { type TestStores, testStores } from "../store/testing.js";
import { countTokens } from "./context.js";
import {
  activeTokens,
  compress,
  compressThreshold,
  foldPoint,
  needsCompression,
  summaryTargetTokens,
  transcriptLine,
} from "./memory.js";
import { createProvider } from "./providers/index.js";
import type { Provider } from "./providers/provider.js";
import { headAndTail } from "./trim.js";

const user = (content: string): UserMessage => ({ role: "user", content });
const assistant = (content: string): AssistantMessage => ({ role: "assistant", content });
const call = (id: string): AssistantMessage => ({
  role: "assistant",
  content: "",
  toolCalls: [{ id, name: "fs__read", arguments: { path: `/srv/${id}.txt` } }],
});
const result = (id: string, content = "ok"): ToolMessage => ({
  role: "tool",
  toolCallId: id,
  name: "fs__read",
  content,
});

describe("foldPoint", () => {
  it("keeps the newest messages and cuts before a user message", () => {
    const messages = [
      user("1"),
      assistant("2"),
      user("3"),
      assistant("4"),
      user("5"),
      assistant("6"),
      user("7"),
    ];
    expect(foldPoint(messages, 3)).toBe(4);
    expect(foldPoint(messages, 4)).toBe(2);
  });

  it("folds nothing when there are no more messages than it keeps", () => {
    expect(foldPoint([user("1"), assistant("2")], 6)).toBe(0);
  });

  it("never cuts between a tool call and its results", () => {
    const messages: ChatMessage[] = [user("go")];
    for (let i = 0; i < 10; i++) messages.push(call(`c${i}`), result(`c${i}`));
    messages.push(assistant("done"));
    for (let keep = 2; keep < messages.length; keep++) {
      const cut = foldPoint(messages, keep);
      expect(messages[cut]?.role, `keep ${keep}`).not.toBe("tool");
      expect(messages.length - cut).toBeGreaterThanOrEqual(keep);
    }
  });
});

describe("compression settings", () => {
  const limits = { contextWindow: 10_000, maxOutputTokens: 2_000 };

  it("reads compressAt as a share of the context window or as tokens", () => {
    expect(compressThreshold(configSchema.parse({}), limits)).toBe(6_000);
    expect(compressThreshold(configSchema.parse({ memory: { compressAt: 0.3 } }), limits)).toBe(3_000);
    expect(compressThreshold(configSchema.parse({ memory: { compressAt: 5_000 } }), limits)).toBe(5_000);
  });

  it("never waits past the input budget", () => {
    expect(compressThreshold(configSchema.parse({ memory: { compressAt: 1 } }), limits)).toBe(8_000);
    expect(compressThreshold(configSchema.parse({ memory: { compressAt: 50_000 } }), limits)).toBe(8_000);
  });

  it("asks for a summary that is a small share of the budget", () => {
    expect(summaryTargetTokens(limits)).toBeLessThanOrEqual(8_000 * 0.1);
    expect(summaryTargetTokens({ contextWindow: 200_000, maxOutputTokens: 64_000 })).toBe(1_000);
  });
});

describe("the transcript the summariser reads", () => {
  it("keeps the head and tail of bulky tool output", () => {
    const output = `HEAD-${"x".repeat(50_000)}-TAIL`;
    const line = transcriptLine(result("c1", output));
    expect(line.length).toBeLessThan(2_000);
    expect(line).toContain("HEAD-");
    expect(line).toContain("-TAIL");
    expect(line).toMatch(/characters left out/);
  });

  it("leaves short text whole", () => {
    expect(headAndTail("short", { over: 10, head: 2, tail: 2 })).toBe("short");
  });

  it("names authors, tools and their arguments", () => {
    expect(transcriptLine({ ...user("hi"), author: "Ada" })).toBe("[user Ada]: hi");
    expect(transcriptLine(call("c9"))).toContain('fs__read with {"path":"/srv/c9.txt"}');
    expect(transcriptLine({ ...result("c9", "boom"), isError: true })).toBe(
      "[result of fs__read (error)]: boom",
    );
  });
});

describe("compress", () => {
  const KEY = "console:memory-test";
  const limits = { contextWindow: 4_000, maxOutputTokens: 1_000 };
  const config = configSchema.parse({ memory: { keepMessages: 6 } });
  let emu: LlmEmulator;
  let provider: Provider;
  let stores: TestStores;
  let sessions: SessionRepository;

  beforeAll(async () => {
    emu = await LlmEmulator.start();
    provider = createProvider({
      provider: "openai",
      apiKey: "sk-test-memory",
      baseURL: emu.openaiBaseUrl,
      maxRetries: 0,
      timeoutMs: 10_000,
    });
  });
  afterAll(() => emu.close());
  beforeEach(async () => {
    stores = testStores("sqlite");
    sessions = new SessionRepository(await stores.open());
  });
  afterEach(async () => {
    emu.reset();
    await stores.dispose();
  });

  /** `turns` exchanges, every third with a tool call whose output is bulky. */
  function conversation(turns: number): ChatMessage[] {
    const out: ChatMessage[] = [];
    for (let i = 0; i < turns; i++) {
      out.push({ role: "user", content: `Question ${i}: what is in /srv/${i}.txt?`, author: "ana" });
      if (i % 3 === 0)
        out.push(call(`c${i}`), result(`c${i}`, `BEGIN-${i} ${"row ".repeat(1_500)} END-${i}`));
      out.push(assistant(`Answer ${i}: ticket SB-${1000 + i} is open.`));
    }
    return out;
  }

  async function saved(messages: ChatMessage[], summary?: string): Promise<Session> {
    const s = await sessions.getOrCreate(KEY);
    s.messages = messages;
    if (summary) s.summary = summary;
    await sessions.save(s);
    return s;
  }

  const deps = () => ({ provider, model: "gpt-4o-mini", sessions, config, limits });

  it("folds the oldest messages into the summary, archives them and keeps the newest turns whole", async () => {
    const messages = conversation(12);
    const session = await saved([...messages]);
    emu.enqueue({
      text: "- Ana asked about files /srv/0.txt to /srv/9.txt; tickets SB-1000..SB-1009 are open.",
    });
    const out = await compress(session, deps(), { force: true });

    expect(out.compressed).toBe(true);
    const kept = messages.slice(out.archived);
    expect(session.messages).toEqual(kept);
    expect(kept.length).toBeGreaterThanOrEqual(6);
    expect(kept[0]?.role).toBe("user");
    expect(session.summary).toContain("SB-1000..SB-1009");
    const reopened = new SessionRepository(await stores.open());
    expect(await reopened.get(KEY)).toEqual(session);
    expect(await reopened.readArchive(KEY)).toEqual(messages.slice(0, out.archived));
    expect(session.archivedCount).toBe(out.archived);
  });

  it("asks for exact identifiers in the conversation's language, with trimmed tool output and no tools", async () => {
    const session = await saved(
      conversation(10),
      "- Earlier: Ana set up the repo at https://git.example.com/ana/sb.",
    );
    emu.enqueue({ text: "- new summary" });
    await compress(session, deps(), { force: true });

    const req = emu.requests.at(-1);
    expect(req?.toolNames).toEqual([]);
    expect(req?.system).toMatch(/exactly as written/);
    expect(req?.system).toMatch(/file paths, URLs/);
    expect(req?.system).toMatch(/language the conversation is held in/);
    const sent = JSON.stringify(req?.messages);
    expect(sent).toContain("https://git.example.com/ana/sb");
    expect(sent).toContain("Question 0: what is in /srv/0.txt?");
    expect(sent).toContain("BEGIN-0");
    expect(sent).toContain("END-0");
    expect(sent).toContain("characters left out");
    expect(sent).not.toContain("Question 9:");
  });

  it("keeps a summary that mentions <think> whole, and leaves out reasoning the template opened", async () => {
    const summary = "- Ana asked how to hide DeepSeek's <think> output; the answer: strip it before showing.";
    emu.enqueue({ text: summary });
    const session = await saved(conversation(12));
    await compress(session, deps(), { force: true });
    expect(session.summary).toBe(summary);

    emu.enqueue({ text: `The user wants a summary. Let me list the files.</think>\n\n${summary}` });
    const other = await saved(conversation(12));
    await compress(other, { ...deps(), model: "qwq-32b" }, { force: true });
    expect(other.summary).toBe(summary);
  });

  it("folds the previous summary into the next one and appends to the archive", async () => {
    const messages = conversation(16);
    const session = await saved([...messages]);
    emu.enqueue({ text: "- first summary SUMMARY-ONE" }, { text: "- second summary" });
    const first = await compress(session, deps(), { force: true });
    session.messages.push(...conversation(8).map((m) => ({ ...m })));
    const second = await compress(session, deps(), { force: true });

    expect(JSON.stringify(emu.requests.at(-1)?.messages)).toContain("SUMMARY-ONE");
    expect(session.summary).toBe("- second summary");
    expect(session.archiveChunks).toBe(2);
    const archive = await sessions.readArchive(KEY);
    expect(archive).toHaveLength(first.archived + second.archived);
    expect(archive.slice(0, first.archived)).toEqual(messages.slice(0, first.archived));
  });

  it("leaves the session and the store as they were when the summary model fails", async () => {
    const session = await saved(conversation(12), "old summary");
    const before = structuredClone(session);
    emu.enqueue({ error: { status: 500 } });
    await expect(compress(session, deps(), { force: true })).rejects.toThrow();
    expect(session).toEqual(before);
    expect(await sessions.get(KEY)).toEqual(before);
    expect(await sessions.readArchive(KEY)).toEqual([]);
  });

  it("leaves the session and the store as they were when saving after the archive fails", async () => {
    const session = await saved(conversation(12), "old summary");
    const before = structuredClone(session);
    /** The real repository, whose session saves fail from now on (a store going down mid-compression). */
    class SavesFail extends SessionRepository {
      override async save(): Promise<void> {
        throw new Error("store went away");
      }
    }
    const failing = new SavesFail(await stores.open());
    emu.enqueue({ text: "- a summary that will not be kept" }, { text: "- the next summary" });
    await expect(compress(session, { ...deps(), sessions: failing }, { force: true })).rejects.toThrow(
      /went away/,
    );
    expect(session).toEqual(before);
    expect(await sessions.get(KEY)).toEqual(before);
    expect(await sessions.readArchive(KEY)).toEqual([]);

    const retried = await compress(session, deps(), { force: true });
    expect(session.archiveChunks).toBe(1);
    expect(await sessions.readArchive(KEY)).toEqual(before.messages.slice(0, retried.archived));
  });

  it("leaves the session as it was when the summary comes back empty", async () => {
    const session = await saved(conversation(12));
    const before = structuredClone(session);
    emu.enqueue({ text: "   " });
    await expect(compress(session, deps(), { force: true })).rejects.toThrow(/empty summary/);
    expect(session).toEqual(before);
    expect(await sessions.get(KEY)).toEqual(before);
  });

  it("compresses without force only past the threshold", async () => {
    const small = await saved(conversation(2));
    expect(needsCompression(small, config, limits)).toBe(false);
    expect(await compress(small, deps())).toMatchObject({ compressed: false, archived: 0 });
    expect(emu.requests).toHaveLength(0);

    const big = await saved(conversation(12));
    expect(needsCompression(big, config, limits)).toBe(true);
    emu.enqueue({ text: "- summary" });
    expect((await compress(big, deps())).compressed).toBe(true);
    expect(needsCompression(big, config, limits)).toBe(false);
  });

  it("folds once the history outgrows its room beside the instructions and tools, below the threshold", async () => {
    const session = await saved(conversation(3));
    const active = activeTokens(session);
    const budget = limits.contextWindow - limits.maxOutputTokens;
    expect(active).toBeLessThan(compressThreshold(config, limits));
    expect(needsCompression(session, config, limits)).toBe(false);
    // Instructions and tool specs leave the history one token less than it has: due.
    expect(needsCompression(session, config, limits, () => budget - active + 1)).toBe(true);
    expect(needsCompression(session, config, limits, () => budget - active)).toBe(false);
    // And the fold itself happens: its plan asks the same question.
    expect((await compress(session, deps())).compressed).toBe(false);
    emu.enqueue({ text: "- summary" });
    const folded = await compress(session, { ...deps(), overhead: () => budget - active + 1 });
    expect(folded.compressed).toBe(true);
  });

  it("does not compress what it must keep, however large", async () => {
    const session = await saved([user("x ".repeat(5_000)), assistant("y ".repeat(5_000))]);
    expect(needsCompression(session, config, limits)).toBe(false);
    expect((await compress(session, deps(), { force: true })).compressed).toBe(false);
  });

  it("folds fewer messages when the summary model cannot read them all at once", async () => {
    const small = configSchema.parse({ modelSettings: { "tiny-summariser": { contextWindow: 3_000 } } });
    const session = await saved(conversation(30));
    const cut = foldPoint(session.messages, small.memory.keepMessages);
    emu.enqueue({ text: "- part one" });
    const out = await compress(
      session,
      { ...deps(), config: small, model: "tiny-summariser" },
      { force: true },
    );
    expect(out.archived).toBeGreaterThan(0);
    expect(out.archived).toBeLessThan(cut);
    expect(countTokens(JSON.stringify(emu.requests.at(-1)?.messages))).toBeLessThan(3_000);
    expect(session.messages[0]?.role).not.toBe("tool");
  });

  it("folds what an Anthropic summariser can read beside its answer as Claude counts it, larger than o200k", async () => {
    const claude = "claude-haiku-5-5";
    const counted = await LlmEmulator.start({
      contextWindows: { [claude]: 8_000 },
      countTokens: (text) => Math.ceil(o200kTokens(text) * 1.3),
    });
    try {
      const anthropic = createProvider({
        provider: "anthropic",
        apiKey: "sk-ant-test-memory",
        baseURL: counted.anthropicBaseUrl,
        maxRetries: 0,
        timeoutMs: 10_000,
      });
      const small = configSchema.parse({ modelSettings: { [claude]: { contextWindow: 8_000 } } });
      // More than the summariser can read at once: it folds what fits.
      const session = await saved(conversation(60));
      counted.enqueue({ text: "- part one" });
      const out = await compress(
        session,
        { ...deps(), provider: anthropic, config: small, model: claude },
        { force: true },
      );
      expect(out.archived).toBeGreaterThan(0);
      const sent = counted.requests.at(-1);
      expect((sent?.promptTokens ?? 0) + (sent?.body.max_tokens as number)).toBeLessThanOrEqual(8_000);
    } finally {
      await counted.close();
    }
  });

  it("cuts a summary that is far longer than asked for", async () => {
    const session = await saved(conversation(12));
    emu.enqueue({ text: "word ".repeat(5_000) });
    await compress(session, deps(), { force: true });
    expect(countTokens(session.summary ?? "")).toBeLessThanOrEqual(
      (limits.contextWindow - limits.maxOutputTokens) * 0.2,
    );
  });
});
