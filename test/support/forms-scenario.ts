import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RecordedRequest, ScriptedTurn } from "../emulators/llm/index.js";
import { everythingServer } from "./chat-process.js";
import { isTitleRequest, lastUserText, toolResultsSinceUser } from "./llm-text.js";

/** "form please" calls the form tool, "link please" the URL one; then the model repeats what the tool said. */
export function formScenario(req: RecordedRequest): ScriptedTurn {
  if (isTitleRequest(req)) return { text: "Forms" };
  const results = toolResultsSinceUser(req);
  if (results.length > 0) return { text: `Tool said: ${results.at(-1)}` };
  const said = lastUserText(req);
  if (/form please/.test(said))
    return { toolCalls: [{ name: "everything__trigger-elicitation-request", arguments: {} }] };
  if (/prerequisite please/.test(said)) {
    return {
      toolCalls: [
        {
          name: "everything__trigger-url-elicitation",
          arguments: { url: "https://example.com/after", message: "Now the real page.", errorPath: true },
        },
      ],
    };
  }
  if (/link please/.test(said)) {
    return {
      toolCalls: [
        {
          name: "everything__trigger-url-elicitation",
          arguments: { url: "https://example.com/flow", message: "Sign the terms on our site." },
        },
      ],
    };
  }
  return { text: `You said: ${said}` };
}

/** A scratch folder with server-everything, whose tools run without approval here. */
export function formsWorkspace(yaml: string, expireAfterMs = 600_000): string {
  const dir = mkdtempSync(join(tmpdir(), "sb-forms-"));
  writeFileSync(
    join(dir, "switchboard.yaml"),
    `${yaml}\nhealth:\n  port: 0\napprovals:\n  expireAfterMs: ${expireAfterMs}\n  rules:\n    - { server: everything, mode: always }\n`,
  );
  writeFileSync(
    join(dir, "mcp.json"),
    JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [everythingServer] } } }),
  );
  return dir;
}
