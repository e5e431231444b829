import { afterEach, describe, expect, it } from "vitest";
import { DiscordEmulator, waitFor } from "../../../test/emulators/discord/index.js";
import type { Artifact } from "../../core/artifacts.js";
import { joinParts } from "../../runtime/split.js";
import { channelOfKey } from "./context.js";
import { answer, type Harness, ScriptedRunner, startHarness } from "./harness.test-helper.js";

let h: Harness;

afterEach(async () => {
  await h?.close();
});

function artifact(name: string, bytes: number): Artifact {
  return { title: name, filename: name, mimeType: "image/png", bytes: new Uint8Array(bytes).fill(7) };
}

async function askInThread(question = "go"): Promise<string> {
  const asked = h.emulator.userMessage(h.emulator.state.general, question, { mentionsBot: true });
  await waitFor(() => h.runner.done.length >= 1, { timeoutMs: 20_000 });
  return asked.id;
}

describe("Discord adapter: writing answers", () => {
  it("splits a 9,000-character answer with code blocks into 5+ messages, fences intact, text identical", async () => {
    const para = (i: number) => `Paragraph ${i}: ${"words and more words. ".repeat(12)}\n\n`;
    const code = (i: number) =>
      `\`\`\`ts\n${Array.from({ length: 30 }, (_, j) => `const v${i}_${j} = ${j};`).join("\n")}\n\`\`\`\n\n`;
    let text = "";
    for (let i = 0; text.length < 9_000; i++) text += i % 3 === 2 ? code(i) : para(i);
    h = await startHarness({
      runner: new ScriptedRunner(answer(text, { chunk: 400 })),
      discord: { editIntervalMs: 250 },
    });
    const thread = await askInThread();
    const parts = h.emulator.botMessages(thread).map((m) => m.content);
    expect(parts.length).toBeGreaterThanOrEqual(5);
    for (const p of parts) {
      expect(p.length).toBeLessThanOrEqual(2_000);
      expect((p.match(/^```/gm) ?? []).length % 2).toBe(0);
    }
    expect(joinParts(parts)).toBe(text);
  });

  it("delivers the final text complete when edits are answered with 429", async () => {
    const text = "Streaming under pressure. ".repeat(30).trim();
    h = await startHarness({ runner: new ScriptedRunner(answer(text, { chunk: 15 })) });
    h.emulator.rateLimitEdits(300, 4);
    const thread = await askInThread();
    expect(h.emulator.botMessages(thread).map((m) => m.content)).toEqual([text]);
    expect(h.emulator.limiter.hits.filter((x) => x.kind === "edit")).toHaveLength(4);
  });

  it("shows tool status as a line under the answer, keeps typing while tools run, and drops the status at the end", async () => {
    h = await startHarness({
      runner: new ScriptedRunner(async (inbound) => {
        const sink = inbound.reply.stream();
        await inbound.reply.status("Calling everything__echo…");
        await waitFor(() =>
          h.emulator.messages(inbound.key.split(":")[2]!).some((m) => m.content.includes("echo")),
        );
        sink.write("The echo said hi.");
        await sink.finish();
      }),
    });
    const thread = await askInThread();
    const [msg] = h.emulator.botMessages(thread);
    expect(msg?.edits[0]).toBe("-# Calling everything__echo…");
    expect(msg?.content).toBe("The echo said hi.");
    expect(h.emulator.typing.some((t) => t.channelId === thread)).toBe(true);
  });

  it("attaches artifacts to the answer, then 10 per message, and says so for a file over the limit", async () => {
    const files = Array.from({ length: 12 }, (_, i) => artifact(`chart-${i}.png`, 100));
    const big = artifact("huge.png", 2_000);
    h = await startHarness({
      discord: { maxFileBytes: 1_000 },
      runner: new ScriptedRunner(async (inbound) => {
        await answer("Here are your charts.")(inbound);
        await Promise.all([...files, big].map((f) => inbound.reply.upload(f)));
      }),
    });
    const thread = await askInThread();
    const msgs = h.emulator.botMessages(thread);
    expect(msgs.map((m) => m.attachments.length)).toEqual([10, 2, 0]);
    expect(msgs[0]?.content).toBe("Here are your charts.");
    expect(msgs[0]?.attachments[0]).toMatchObject({ filename: "chart-0.png", size: 100 });
    expect(msgs[2]?.content).toMatch(/huge\.png \(2\.0 KB\).*could not attach/);
  });

  it("sends a file handed over during the answer with the answer's final write, in one request", async () => {
    let uploaded: Promise<void> | undefined;
    h = await startHarness({
      runner: new ScriptedRunner(async (inbound) => {
        const sink = inbound.reply.stream();
        sink.write("Here is the image.");
        uploaded = inbound.reply.upload(artifact("image.png", 100));
        await sink.finish();
        await uploaded;
      }),
    });
    const thread = await askInThread();
    const msgs = h.emulator.botMessages(thread);
    expect(msgs.map((m) => [m.content, m.attachments.map((a) => a.filename)])).toEqual([
      ["Here is the image.", ["image.png"]],
    ]);
    const writes = h.emulator.requests.filter((r) => r.path.includes(`/channels/${thread}/messages`));
    expect(writes.map((r) => r.method)).toEqual(["POST"]);
  });

  it("attaches files that came while the answer streamed to its last message's final edit", async () => {
    const text = "A streamed answer that takes a few writes. ".repeat(8).trim();
    h = await startHarness({
      runner: new ScriptedRunner(async (inbound) => {
        const sink = inbound.reply.stream();
        const uploads: Promise<void>[] = [];
        for (let i = 0; i < text.length; i += 40) {
          sink.write(text.slice(i, i + 40));
          if (i === 120) uploads.push(inbound.reply.upload(artifact("a.png", 100)));
          await new Promise((r) => setTimeout(r, 120));
        }
        uploads.push(inbound.reply.upload(artifact("b.png", 100)));
        await sink.finish();
        await Promise.all(uploads);
      }),
    });
    const thread = await askInThread();
    const [msg, ...more] = h.emulator.botMessages(thread);
    expect(more).toEqual([]);
    expect(msg?.content).toBe(text);
    expect(msg?.attachments.map((a) => a.filename)).toEqual(["a.png", "b.png"]);
    // The files came with the text's edits, or (when the last text was already out before
    // the answer ended) with one more edit of the same message: never one write per file.
    const edits = h.emulator.requests.filter((r) => r.method === "PATCH" && r.path.endsWith(`/${msg!.id}`));
    expect(edits.length - (msg?.edits.length ?? 0)).toBeLessThanOrEqual(1);
  });

  it("resolves each upload only once its file, or the sentence saying why not, is in the thread", async () => {
    // The guild takes 500 bytes (its real limit, scaled); the operator configured 10,000.
    const emulator = await DiscordEmulator.start({ rateLimits: { speed: 10 }, maxFileBytes: 500 });
    const outcomes: string[] = [];
    h = await startHarness({
      emulator,
      discord: { maxFileBytes: 10_000 },
      runner: new ScriptedRunner(async (inbound) => {
        await answer("Two files.")(inbound);
        const thread = channelOfKey(inbound.key) ?? "";
        const shown = () => h.emulator.botMessages(thread);
        await inbound.reply.upload(artifact("small.png", 100));
        outcomes.push(`small: ${shown().flatMap((m) => m.attachments).length} attached`);
        await inbound.reply.upload(artifact("refused.png", 1_000));
        outcomes.push(`refused: ${shown().at(-1)?.content}`);
      }),
    });
    try {
      await askInThread();
      expect(outcomes).toEqual([
        "small: 1 attached",
        "refused: I made refused.png (1000 B), but Discord would not take a file that large here, so I could not attach it.",
      ]);
    } finally {
      await h.close();
      await emulator.stop();
      h = undefined as unknown as Harness;
    }
  });

  it("ends with a clear sentence when the turn fails, never a dangling placeholder", async () => {
    h = await startHarness({
      runner: new ScriptedRunner(async (inbound) => {
        const sink = inbound.reply.stream();
        sink.write("Starting to answer");
        await sink.fail("The model is not answering right now. Please try again in a minute.");
      }),
    });
    const thread = await askInThread();
    expect(h.emulator.botMessages(thread).map((m) => m.content)).toEqual([
      "Starting to answer\n\nThe model is not answering right now. Please try again in a minute.",
    ]);
  });

  it("never pings anyone the model names", async () => {
    h = await startHarness({ runner: new ScriptedRunner(answer("@everyone look")) });
    const thread = await askInThread();
    const [msg] = h.emulator.botMessages(thread);
    expect(msg?.content).toBe("@everyone look");
    expect(msg?.allowedMentions).toEqual({ parse: [] });
  });
});
