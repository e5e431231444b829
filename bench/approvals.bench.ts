/**
 * Tool approvals, as a person sees them: the real app (startApp, Socket Mode against the
 * Slack emulator at Slack's real limits, SQLite, the reference filesystem and everything
 * MCP servers over stdio) and the LLM emulator. Each run is a mention in its own channel
 * whose model answer calls filesystem's `write_file` (annotated destructive):
 * - mention -> approval buttons on Slack (the question message exists);
 * - click -> the tool ran (the file's birth time, as the server wrote it).
 * Baseline from the same run: mention -> first visible write of the same request made
 * with the read-only `echo` (no question), so the ratio is what asking costs on top.
 * Run alone: `npm run bench -- approvals` (BENCH_APPROVAL_RUNS changes the size).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type App, startApp } from "../src/app.js";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../test/emulators/llm/index.js";
import { type EmuMessage, SlackEmulator } from "../test/emulators/slack/index.js";
import { clickAction } from "../test/emulators/slack/interactive.js";
import { appEnv } from "../test/support/app-env.js";
import { everythingServer, repoRoot } from "../test/support/chat-process.js";
import { isTitleRequest, lastUserText, toolResultsSinceUser } from "../test/support/llm-text.js";
import { until } from "./support/replicas.js";
import { atMost, type BenchResult, fmt, ratio } from "./support/report.js";
import { p50, p90 } from "./support/stats.js";

const RUNS = Number(process.env.BENCH_APPROVAL_RUNS ?? 20);
/** Targets on this machine: the question shows within 1 s of the mention, the tool runs within 0.5 s of the click. */
const TARGET_QUESTION_MS = 1_000;
const TARGET_CLICK_TO_TOOL_MS = 500;
/** Asking may cost at most this much more than showing the first words of an answer. */
const TARGET_QUESTION_RATIO = 3;

const filesystemServer = join(repoRoot, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");

function model(root: string) {
  return (req: RecordedRequest): ScriptedTurn => {
    if (isTitleRequest(req)) return { text: "Notes" };
    if (toolResultsSinceUser(req).length > 0) return { text: "Done." };
    const said = lastUserText(req);
    const note = /write (note-\d+)/.exec(said)?.[1];
    if (note) {
      return {
        text: `Writing ${note}.`,
        toolCalls: [
          { name: "filesystem__write_file", arguments: { path: join(root, `${note}.txt`), content: note } },
        ],
      };
    }
    const echo = /echo (\S+)/.exec(said)?.[1] ?? "x";
    return {
      text: `Echoing ${echo}.`,
      toolCalls: [{ name: "everything__echo", arguments: { message: echo } }],
    };
  };
}

const hasButtons = (m: EmuMessage) =>
  (m.blocks ?? []).some((b) => (b as { type?: string }).type === "actions");

export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "sb-bench-approvals-"));
  const root = join(dir, "files");
  mkdirSync(root);
  writeFileSync(join(dir, "switchboard.yaml"), "llm:\n  maxRetries: 0\nhealth:\n  enabled: false\n");
  writeFileSync(
    join(dir, "mcp.json"),
    JSON.stringify({
      mcpServers: {
        filesystem: { command: process.execPath, args: [filesystemServer, root] },
        everything: { command: process.execPath, args: [everythingServer] },
      },
    }),
  );
  const llm = await LlmEmulator.start({ responder: model(root) });
  const slack = await SlackEmulator.start();
  let app: App | undefined;
  const question: number[] = [];
  const clickToTool: number[] = [];
  const firstVisible: number[] = [];
  try {
    app = await startApp({ env: appEnv({ dir, llm, slack }), cwd: dir });
    for (let i = 0; i < RUNS; i++) {
      // A channel each: Slack's per-channel post limit is not what is measured here.
      const channel = `CA${i}`;
      slack.state.addChannel(channel, `approvals-${i}`);
      const echoAt = Date.now();
      const e = slack.mention(channel, "U_ALICE", `echo e${i}`);
      await until(() => slack.botReplies(channel, e.ts).length > 0, "the echo answer");
      firstVisible.push(Date.now() - echoAt);
      await until(
        () => slack.botReplies(channel, e.ts).some((r) => r.text.endsWith("Done.")),
        "the echo to end",
      );
      await app.dispatcher.settled();

      const askedAt = Date.now();
      const m = slack.mention(channel, "U_ALICE", `write note-${i}`);
      const q = await until(() => slack.botReplies(channel, m.ts).find(hasButtons), "the question");
      question.push(Date.now() - askedAt);
      const approve = (
        q.blocks as Array<{ type: string; elements?: Array<{ action_id: string; value: string }> }>
      )
        .flatMap((b) => b.elements ?? [])
        .find((el) => el.value === "approve");
      if (!approve) throw new Error("the question has no Approve button");
      const clickedAt = Date.now();
      clickAction(slack, {
        user: "U_ALICE",
        channel,
        messageTs: q.ts,
        actionId: approve.action_id,
        value: "approve",
      });
      const file = join(root, `note-${i}.txt`);
      await until(() => existsSync(file), "the file");
      const st = statSync(file);
      clickToTool.push((st.birthtimeMs > 0 ? st.birthtimeMs : st.mtimeMs) - clickedAt);
      await until(
        () => slack.botReplies(channel, m.ts).some((r) => r.text.endsWith("Done.")),
        "the answer after the click",
      );
      await app.dispatcher.settled();
    }
  } finally {
    await app?.stop();
    await slack.stop();
    await llm.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const q50 = p50(question);
  const base50 = p50(firstVisible);
  return {
    about:
      `${RUNS} mentions in Slack (Socket Mode, real limits), each in its own channel, whose answer calls ` +
      "filesystem's write_file, approved by the asker; the baseline is the same mention asking for the read-only echo (no question).",
    figures: {
      "mention -> approval buttons p50 / p90 (ms)": `${fmt(q50)} / ${fmt(p90(question))}`,
      "click -> tool ran p50 / p90 (ms)": `${fmt(p50(clickToTool))} / ${fmt(p90(clickToTool))}`,
      "baseline: mention -> first visible write, no approval, p50 (ms)": fmt(base50),
      "question / baseline (p50)": ratio(q50, base50),
    },
    checks: [
      atMost("mention -> approval buttons p50", q50, TARGET_QUESTION_MS, "ms"),
      atMost("click -> tool ran p50", p50(clickToTool), TARGET_CLICK_TO_TOOL_MS, "ms"),
      atMost("approval buttons / first visible write (p50)", q50 / base50, TARGET_QUESTION_RATIO, "x"),
    ],
  };
}
