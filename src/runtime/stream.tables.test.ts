import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { FakeChannel } from "./stream.fake.js";
import { StreamWriter } from "./stream.js";
import { tablesToCodeBlocks } from "./tables.js";

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

it("streams a table whose one long cell comes late into a few whole messages, not one character each", async () => {
  // Rendered as a code block, every row is padded to row 44's cell: the message holding it
  // renders several times longer than its source.
  const rows = Array.from(
    { length: 50 },
    (_, i) =>
      `| v${i}.0 | ${i === 44 ? "Rewrote the scheduler so that a 429 pauses only its own bucket, with a migration guide for plugins" : "Bug fixes"} | 2024-0${1 + (i % 9)}-1${i % 10} |`,
  );
  const answer = `Release history:\n\n| Version | Changes | Date |\n|---|---|---|\n${rows.join("\n")}\n\nThat is all.`;
  const channel = new FakeChannel({ latencyMs: 80 });
  const writer = new StreamWriter(channel, {
    limit: 2000,
    intervalMs: 1500,
    render: tablesToCodeBlocks,
    statusLine: true,
  });
  for (let at = 0; at < answer.length; at += 12) {
    writer.write(answer.slice(at, at + 12));
    await vi.advanceTimersByTimeAsync(60);
  }
  const done = writer.finish();
  await vi.runAllTimersAsync();
  await done;
  const texts = channel.texts();
  expect(texts.length).toBeLessThanOrEqual(3);
  for (const text of texts) {
    expect(text.length).toBeLessThanOrEqual(2000);
    expect(text.length).toBeGreaterThan(100);
  }
  expect(texts[0]?.startsWith("Release history:\n\n```")).toBe(true);
  // Every row once, in the message that carries it.
  for (let i = 0; i < 50; i++) expect(texts.filter((t) => t.includes(`v${i}.0 `))).toHaveLength(1);
  expect(texts.at(-1)?.endsWith("\n\nThat is all.")).toBe(true);
});
