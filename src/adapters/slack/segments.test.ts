import { LogLevel } from "@slack/bolt";
import { WebClient } from "@slack/web-api";
import { afterEach, describe, expect, it } from "vitest";
import { SlackEmulator } from "../../../test/emulators/slack/index.js";
import { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { joinParts, openFenceAtEnd } from "../../runtime/split.js";
import { StreamWriter } from "../../runtime/stream.js";
import { tablesToCodeBlocks } from "../../runtime/tables.js";
import { slackMessageOps } from "./message-ops.js";
import { NativeStream } from "./native-stream.js";
import { RenderedText, stableEnd } from "./stable-text.js";

let emu: SlackEmulator | undefined;
afterEach(async () => {
  await emu?.stop();
  emu = undefined;
});

/** A deterministic pseudo-random generator, so a failure can be replayed. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Markdown with prose, long lines, and code blocks of several fence styles. */
function markdown(rand: () => number, size: number): string {
  const out: string[] = [];
  while (out.join("\n\n").length < size) {
    const r = rand();
    if (r < 0.35) {
      const fence = rand() < 0.5 ? "```" : "~~~~";
      const body = Array.from(
        { length: 2 + Math.floor(rand() * 12) },
        (_, i) => `  line(${i}); // ${"x".repeat(Math.floor(rand() * 60))}`,
      );
      out.push(`${fence}py\n${body.join("\n")}\n${fence}`);
    } else {
      const words = Array.from({ length: 5 + Math.floor(rand() * 80) }, (_, i) =>
        i % 9 === 8 ? "end." : "word",
      );
      out.push(words.join(" "));
    }
  }
  return out.join(rand() < 0.5 ? "\n\n" : "\n");
}

describe("native stream segments (real WebClient, emulated Slack)", () => {
  it("cuts segments only where nothing sent must move, fences balanced, text identical, for random answers and deltas", async () => {
    emu = await SlackEmulator.start({ rateLimits: { enabled: false } });
    const web = new WebClient(emu.botToken, { slackApiUrl: emu.apiUrl, logLevel: LogLevel.ERROR });
    for (let seed = 1; seed <= 12; seed++) {
      const rand = rng(seed);
      const answer = markdown(rand, 2_000 + Math.floor(rand() * 3_000));
      const root = emu.post("C1", "U_ALICE", `question ${seed}`);
      const place = { team: "T1", channel: "C1", threadTs: root.ts, user: "U_ALICE" };
      const stream = new NativeStream(
        web,
        new WriteScheduler({ limitOf: () => undefined }),
        place,
        { segmentChars: 400, lifetimeMs: 60_000, intervalMs: 0 },
        (md) => md,
        () => new StreamWriter(slackMessageOps(web, place), { limit: 400, intervalMs: 0 }),
      );
      for (let i = 0; i < answer.length; ) {
        const n = 1 + Math.floor(rand() * 40);
        stream.write(answer.slice(i, i + n));
        i += n;
        if (rand() < 0.3) await new Promise((r) => setTimeout(r, 1));
      }
      await stream.finish();
      const replies = emu.botReplies("C1", root.ts);
      expect(stream.fellBack, `seed ${seed}`).toBe(false);
      for (const r of replies) {
        expect(r.text.length, `seed ${seed}`).toBeLessThanOrEqual(400);
        expect(openFenceAtEnd(r.text), `seed ${seed}`).toBeNull();
        expect(r.stream?.state).toBe("stopped");
      }
      expect(joinParts(replies.map((r) => r.text)), `seed ${seed}`).toBe(answer);
    }
  });
});

describe("rendered text for append-only streams", () => {
  it("holds back a table until it ends, and a line that has a pipe until it ends", () => {
    expect(stableEnd("Hi there")).toBe(8);
    expect(stableEnd("Hi\n| a | b |\n|---|---|\n| 1 |")).toBe(3);
    expect(stableEnd("Hi\n| a | b |\n|---|---|\n")).toBe(3);
    expect(stableEnd("Hi\n| a | b |\n|---|---|\n\nAfter")).toBe("Hi\n| a | b |\n|---|---|\n\nAfter".length);
    expect(stableEnd("```\n| in | code |\n")).toBe("```\n| in | code |\n".length);
    expect(stableEnd("one | two")).toBe(0);
  });

  it("only ever grows, and ends as the rendering of the whole answer", () => {
    const answer =
      "Intro\n\n| k | v |\n|---|---|\n| a | 1 |\n| bbbb | 22 |\n\n```\n| x | y |\n|---|---|\n```\nEnd.";
    const text = new RenderedText(tablesToCodeBlocks);
    let last = "";
    for (const ch of answer) {
      text.push(ch);
      const now = text.update(false);
      expect(now.startsWith(last)).toBe(true);
      last = now;
    }
    expect(text.update(true)).toBe(tablesToCodeBlocks(answer));
  });
});
