/**
 * The baseline: the bot a newcomer writes in an afternoon with the raw SDKs. On a mention
 * it streams the model (the openai SDK, against the same emulator and the same answers),
 * posts the answer's first text as soon as it arrives, edits the message with the text so
 * far at most once a second, and writes the full text in a final edit. One tool, `echo`
 * of the real "everything" MCP server through the raw MCP SDK client, one tool step.
 * It retries only a 429 (after its Retry-After); it has no queue, no store, no dedupe,
 * no splitting, no titles, no memory.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { everythingServer } from "../../test/support/chat-process.js";

/** Where the naive bot writes one answer; `post` returns the message's id. */
export interface NaiveOps {
  post(text: string): Promise<string>;
  edit(id: string, text: string): Promise<void>;
}

export const NAIVE_EDIT_EVERY_MS = 1_000;

export class NaiveBrain {
  private constructor(
    private readonly openai: OpenAI,
    private readonly mcp: Client,
    private readonly tools: ChatCompletionTool[],
  ) {}

  static async start(baseURL: string): Promise<NaiveBrain> {
    const openai = new OpenAI({ apiKey: "sk-naive-bench", baseURL, maxRetries: 0 });
    const mcp = new Client({ name: "naive-bench", version: "1" });
    await mcp.connect(
      new StdioClientTransport({ command: process.execPath, args: [everythingServer], stderr: "pipe" }),
    );
    const listed = await mcp.listTools();
    const echo = listed.tools.find((t) => t.name === "echo");
    if (!echo) throw new Error("server-everything has no echo tool");
    const tools: ChatCompletionTool[] = [
      {
        type: "function",
        function: {
          name: "everything__echo",
          description: echo.description ?? "",
          parameters: echo.inputSchema as Record<string, unknown>,
        },
      },
    ];
    return new NaiveBrain(openai, mcp, tools);
  }

  /** Answers `text`, writing through `ops`; resolves when the final edit is done. */
  async answer(text: string, ops: NaiveOps): Promise<void> {
    const messages: ChatCompletionMessageParam[] = [
      { role: "system", content: "You are a helpful assistant in a team chat." },
      { role: "user", content: text },
    ];
    let shown = "";
    let id: string | undefined;
    let lastWrite = 0;
    for (let step = 0; step < 2; step++) {
      const stream = await this.openai.chat.completions.create({
        model: "gpt-4o-mini",
        messages,
        stream: true,
        ...(step === 0 ? { tools: this.tools } : {}),
      });
      const calls: Array<{ id: string; name: string; args: string }> = [];
      for await (const chunk of stream) {
        const delta = chunk.choices[0]?.delta;
        for (const c of delta?.tool_calls ?? []) {
          const call = calls[c.index] ?? { id: "", name: "", args: "" };
          calls[c.index] = call;
          if (c.id) call.id = c.id;
          if (c.function?.name) call.name += c.function.name;
          if (c.function?.arguments) call.args += c.function.arguments;
        }
        if (!delta?.content) continue;
        shown += delta.content;
        if (id === undefined) {
          id = await ops.post(shown);
          lastWrite = Date.now();
        } else if (Date.now() - lastWrite >= NAIVE_EDIT_EVERY_MS) {
          await ops.edit(id, shown);
          lastWrite = Date.now();
        }
      }
      if (calls.length === 0) break;
      messages.push({
        role: "assistant",
        content: null,
        tool_calls: calls.map((c) => ({
          id: c.id,
          type: "function",
          function: { name: c.name, arguments: c.args },
        })),
      });
      for (const c of calls) {
        const result = await this.mcp.callTool({ name: "echo", arguments: JSON.parse(c.args || "{}") });
        const content = (result.content as Array<{ type: string; text?: string }>)
          .map((p) => p.text ?? "")
          .join("\n");
        messages.push({ role: "tool", tool_call_id: c.id, content });
      }
    }
    if (id === undefined) await ops.post(shown || "(no answer)");
    else await ops.edit(id, shown);
  }

  async close(): Promise<void> {
    await this.mcp.close();
  }
}

/** Runs `write`, and after a 429 waits its Retry-After and runs it again; anything else throws. */
export async function retryOn429<T>(
  write: () => Promise<T>,
  retryAfterMs: (err: unknown) => number | undefined,
): Promise<T> {
  for (;;) {
    try {
      return await write();
    } catch (err) {
      const wait = retryAfterMs(err);
      if (wait === undefined) throw err;
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
