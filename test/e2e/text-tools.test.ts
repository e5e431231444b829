import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCore, type Core } from "../../src/app.js";
import type { Artifact } from "../../src/core/artifacts.js";
import type { Inbound, Reply } from "../../src/runtime/contract.js";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../emulators/llm/index.js";
import { appEnv } from "../support/app-env.js";
import { everythingMcp, scratchConfig } from "../support/chat-process.js";

const MODEL = "llama3.1:8b";
const CALL = '<tool_call>{"name": "everything__echo", "arguments": {"message": "pong-42"}}</tool_call>';

type Message = { role: string; content: string };

/** A local model without native tool calls: it writes <tool_call> blocks and reads <tool_result> blocks. */
function textModel(req: RecordedRequest): ScriptedTurn {
  if (req.system.startsWith("You name chat threads.")) return { text: "Echo check" };
  const last = (req.messages as Message[]).at(-1)?.content ?? "";
  const result = /<tool_result name="everything__echo" id="[^"]+">\n([\s\S]*?)\n<\/tool_result>/.exec(last);
  if (result) return { text: `The tool answered: ${result[1]}` };
  // Small chunks: the tags and the JSON arrive split across many deltas.
  return { text: `Let me ask the echo tool.\n${CALL}`, chunkSize: 5 };
}

/** What the turn shows the person: the streamed text, status lines and files. */
function recordingReply() {
  const shown = {
    text: "",
    statuses: [] as string[],
    files: [] as Artifact[],
    failed: undefined as string | undefined,
  };
  const reply: Reply = {
    status: async (text) => {
      shown.statuses.push(text);
    },
    stream: () => ({
      write: (delta) => {
        shown.text += delta;
      },
      finish: async () => undefined,
      fail: async (message) => {
        shown.failed = message;
      },
    }),
    upload: async (a) => {
      shown.files.push(a);
    },
    title: async () => undefined,
    notice: async () => undefined,
  };
  return { reply, shown };
}

describe("the text tool protocol, through the agent, with the reference MCP server", () => {
  let llm: LlmEmulator;
  let dir: string;
  let core: Core;
  let shown: ReturnType<typeof recordingReply>["shown"];

  beforeAll(async () => {
    llm = await LlmEmulator.start({ responder: textModel });
    dir = scratchConfig(`modelSettings:\n  "${MODEL}":\n    toolProtocol: text\n`, everythingMcp);
    core = await buildCore({ env: { ...appEnv({ dir, llm }), LLM_MODEL: MODEL }, cwd: dir });
    const recorded = recordingReply();
    shown = recorded.shown;
    const inbound: Inbound = {
      id: "text-protocol-1",
      key: "console:local",
      platform: "console",
      channel: "local",
      user: { id: "u1", name: "alice" },
      text: "echo pong-42 please",
      attachments: [],
      reply: recorded.reply,
    };
    await core.dispatcher.handle(inbound);
    await core.dispatcher.settled();
  }, 60_000);

  afterAll(async () => {
    await core?.close();
    await llm?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const chat = () => llm.requests.filter((r) => !r.system.startsWith("You name chat threads."));

  it("sends no native tools, and the MCP server's tools as a manifest in the system prompt", () => {
    const [first] = chat();
    expect(first?.model).toBe(MODEL);
    expect(first?.body).not.toHaveProperty("tools");
    expect(first?.body).not.toHaveProperty("tool_choice");
    const echo = core.hub.tools().find((t) => t.name === "everything__echo");
    expect(echo).toBeDefined();
    expect(first?.system).toContain(`### everything__echo\n${echo?.description}`);
    expect(first?.system).toContain(JSON.stringify(echo?.inputSchema));
    expect(first?.system).toContain(
      '<tool_call>{"name": "TOOL_NAME", "arguments": {"param": "value"}}</tool_call>',
    );
  });

  it("runs the <tool_call> the model wrote on the real server and gives back a <tool_result>", () => {
    expect(chat()).toHaveLength(2);
    const second = (chat()[1]?.messages ?? []) as Message[];
    expect(second.slice(-2)).toEqual([
      {
        role: "assistant",
        content:
          'Let me ask the echo tool.\n\n<tool_call>{"name":"everything__echo","arguments":{"message":"pong-42"}}</tool_call>',
      },
      {
        role: "user",
        content: expect.stringMatching(
          /^<tool_result name="everything__echo" id="[^"]+">\nEcho: pong-42\n<\/tool_result>$/,
        ),
      },
    ]);
  });

  it("shows the person the answer and the call's status, never the protocol's tags", () => {
    expect(shown.failed).toBeUndefined();
    expect(shown.text).toBe("Let me ask the echo tool.\nThe tool answered: Echo: pong-42");
    expect(shown.statuses).toContain("Calling everything__echo…");
  });

  it("keeps the call and its result in the session as ordinary tool messages", async () => {
    const session = await core.sessions.get("console:local");
    expect(session?.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(session?.messages[2]).toMatchObject({
      role: "tool",
      name: "everything__echo",
      content: "Echo: pong-42",
    });
  });
});
