/**
 * What the approvals e2e tests share: a model that writes notes through server-filesystem's
 * `write_file` (which asks) and echoes through server-everything's `echo` (which does not),
 * the scratch folder with both servers, and the questions in a Slack thread with their clicks.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LlmEmulator, RecordedRequest, ScriptedTurn } from "../emulators/llm/index.js";
import { type EmuMessage, type SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { clickAction } from "../emulators/slack/interactive.js";
import { everythingServer, repoRoot } from "./chat-process.js";
import { isTitleRequest, lastUserText, toolResultsSinceUser } from "./llm-text.js";
import { actionsOf, type SlackAction } from "./slack-actions.js";

const filesystemServer = join(repoRoot, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");

/** "write note-1" asks for write_file of note-1.txt; "echo x" calls echo; then the model reports what the tool said. */
export function scenario(root: string) {
  return (req: RecordedRequest): ScriptedTurn => {
    if (isTitleRequest(req)) return { text: "Notes" };
    const said = lastUserText(req).replace(/^\[[^\]]*\]\s*/, "");
    const results = toolResultsSinceUser(req);
    if (results.length > 0) return { text: `Tool said: ${results.at(-1)}` };
    const note = /write (note-\d+)/.exec(said)?.[1];
    if (note) {
      return {
        text: `I will write ${note}.`,
        toolCalls: [
          {
            name: "filesystem__write_file",
            arguments: { path: join(root, `${note}.txt`), content: `contents of ${note}` },
          },
        ],
      };
    }
    const echo = /echo (\S+)/.exec(said)?.[1];
    if (echo) return { toolCalls: [{ name: "everything__echo", arguments: { message: echo } }] };
    return { text: `You said: ${said}` };
  };
}

/** A scratch folder with the config, an mcp.json with both reference servers, and the folder files are written to. */
export function workspace(yaml: string): { dir: string; root: string } {
  const dir = mkdtempSync(join(tmpdir(), "sb-approvals-"));
  const root = join(dir, "files");
  writeFileSync(join(dir, "switchboard.yaml"), `${yaml}\nhealth:\n  port: 0\n`);
  writeFileSync(
    join(dir, "mcp.json"),
    JSON.stringify({
      mcpServers: {
        filesystem: { command: process.execPath, args: [filesystemServer, root] },
        everything: { command: process.execPath, args: [everythingServer] },
      },
    }),
  );
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root);
  return { dir, root };
}

/** Requests that carried the result of a write_file call. */
export const writeResults = (llm: LlmEmulator) =>
  llm.requests.filter((r) =>
    toolResultsSinceUser(r).some((t) => /Successfully wrote|denied|not run/i.test(t)),
  );

/** The question in a Slack thread, and clicks on the buttons it had when it was asked (a settled one has none). */
export function slackQuestions(emulator: () => SlackEmulator) {
  const asked = new Map<string, SlackAction[]>();
  const question = (m: EmuMessage) =>
    waitFor(() => {
      const q = emulator()
        .botReplies("C1", m.ts)
        .find((r) => actionsOf(r).length > 0);
      if (q) asked.set(q.ts, actionsOf(q));
      return q && { message: q, actions: actionsOf(q) };
    });
  const click = (q: EmuMessage, user: string, value: string, times = 1) => {
    if (!asked.has(q.ts)) asked.set(q.ts, actionsOf(q));
    const action = asked.get(q.ts)?.find((a) => a.value === value);
    if (!action) throw new Error(`no ${value} button on the question`);
    return clickAction(emulator(), {
      user,
      channel: "C1",
      messageTs: q.ts,
      actionId: action.action_id,
      value,
      blockId: action.block_id,
      times,
    });
  };
  return { question, click };
}
