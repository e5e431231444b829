import type { ChatMessage, ToolCall, UserMessage } from "../../core/messages.js";
import type { ModelEvent, ModelRequest, Provider, StopReason, ToolSpec } from "./provider.js";
import { type ThinkPiece, ThinkSplitter, thinkHoldFor } from "./think.js";
import { newCallId, parseArguments, stopWithCalls } from "./wire.js";

/**
 * Tool calling for models without native tools: the tool manifest goes into the system
 * prompt, earlier calls and results are rendered as tagged text, and `<tool_call>` blocks
 * are parsed out of the streamed answer. `<tool_code>` is accepted too, since some local
 * models (and local-llm-chat's prompts) use it.
 */
export function withTextToolProtocol(inner: Provider): Provider {
  return {
    name: inner.name,
    listModels: (signal) => inner.listModels(signal),
    stream: (req, signal) => streamWithTextTools(inner, req, signal),
  };
}

async function* streamWithTextTools(
  inner: Provider,
  req: ModelRequest,
  signal: AbortSignal,
): AsyncGenerator<ModelEvent> {
  // Reasoning is passed on as written (the step hides it) and never parsed: a reasoning
  // model drafts its calls there before it makes them, and a draft run is a call run twice.
  const think = new ThinkSplitter(thinkHoldFor(req.model));
  const parser = new ToolCallParser();
  const parsed = (pieces: ThinkPiece[], stop?: StopReason): ModelEvent[] => [
    ...pieces.flatMap((p) =>
      p.reasoning ? [{ type: "text" as const, delta: p.text }] : parser.push(p.text),
    ),
    ...(stop ? parser.finish(stop === "length") : []),
  ];
  let calls = 0;
  const { toolChoice: _native, ...rest } = req;
  const textRequest: ModelRequest = {
    ...rest,
    system:
      req.tools.length > 0
        ? `${req.system}\n\n${toolManifest(req.tools, req.toolChoice)}`.trim()
        : req.system,
    messages: renderHistory(req.messages),
    tools: [],
  };
  for await (const event of inner.stream(textRequest, signal)) {
    if (event.type === "text") {
      for (const out of parsed(think.push(event.delta))) {
        if (out.type === "tool_call") calls++;
        yield out;
      }
    } else if (event.type === "stop") {
      for (const out of parsed(think.flush(), event.reason)) {
        if (out.type === "tool_call") calls++;
        yield out;
      }
      // As the native providers do: a "tool_calls" stop would hide that the limit cut a call.
      yield { type: "stop", reason: stopWithCalls(event.reason, calls) };
    } else {
      if (event.type === "tool_call") calls++;
      yield event;
    }
  }
}

export function toolManifest(tools: ToolSpec[], choice: ModelRequest["toolChoice"] = "auto"): string {
  const entries = tools.map(
    (t) =>
      `### ${t.name}\n${t.description || "(no description)"}\nInput schema: ${JSON.stringify(t.inputSchema)}`,
  );
  return [
    "# Tools",
    "You can call the tools listed below. To call one, write a block in exactly this format, with the arguments as a JSON object that matches the tool's input schema:",
    '<tool_call>{"name": "TOOL_NAME", "arguments": {"param": "value"}}</tool_call>',
    'Write one block per call; several blocks call several tools at once. After your tool calls, stop and wait. Each result comes back in a message as <tool_result name="TOOL_NAME" id="...">...</tool_result>. Never write <tool_result> yourself. When you need no tool, answer normally, without any block.',
    "",
    "## Available tools",
    ...entries,
    // The tools stay listed so that earlier calls in the history still make sense.
    ...(choice === "none" ? ["", "Do not call any tool now: answer with what you already have."] : []),
  ].join("\n");
}

export function renderToolCall(call: ToolCall): string {
  return `<tool_call>${JSON.stringify({ name: call.name, arguments: call.arguments })}</tool_call>`;
}

/** Native tool turns become plain text, the only form such models can read back. */
export function renderHistory(messages: ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  let results: UserMessage | undefined;
  for (const msg of messages) {
    if (msg.role === "assistant" && msg.toolCalls?.length) {
      const calls = msg.toolCalls.map(renderToolCall).join("\n");
      out.push({ role: "assistant", content: msg.content ? `${msg.content}\n${calls}` : calls });
    } else if (msg.role === "tool") {
      const status = msg.isError ? ' error="true"' : "";
      const block = `<tool_result name="${msg.name}" id="${msg.toolCallId}"${status}>\n${msg.content}\n</tool_result>`;
      // Results of one step travel together, as they would natively.
      if (results && out.at(-1) === results) results.content += `\n${block}`;
      else {
        results = { role: "user", content: block };
        out.push(results);
      }
    } else {
      out.push(msg);
    }
  }
  return out;
}

const TAGS = ["tool_call", "tool_code"] as const;
const OPENERS = TAGS.map((t) => `<${t}>`);

type ParsedEvent = Extract<ModelEvent, { type: "text" } | { type: "tool_call" }>;

/**
 * Incremental `<tool_call>` extraction. Text outside blocks is released at once, except a
 * trailing piece that could still grow into an opening tag; a block is emitted as a call
 * when its closing tag arrives.
 */
export class ToolCallParser {
  private buffer = "";
  /** The tag name of the block being read, or undefined outside a block. */
  private open: (typeof TAGS)[number] | undefined;

  push(chunk: string): ParsedEvent[] {
    this.buffer += chunk;
    const out: ParsedEvent[] = [];
    for (;;) {
      if (this.open) {
        const close = this.findClose();
        if (!close) break;
        out.push({ type: "tool_call", call: parseBlock(this.buffer.slice(0, close.at)) });
        this.buffer = this.buffer.slice(close.at + close.length);
        this.open = undefined;
        continue;
      }
      const start = this.findOpen();
      if (start) {
        if (start.at > 0) out.push({ type: "text", delta: this.buffer.slice(0, start.at) });
        this.buffer = this.buffer.slice(start.at + start.tag.length + 2);
        this.open = start.tag;
        continue;
      }
      const keep = partialOpenerLength(this.buffer);
      const text = this.buffer.slice(0, this.buffer.length - keep);
      if (text) out.push({ type: "text", delta: text });
      this.buffer = this.buffer.slice(text.length);
      break;
    }
    return out;
  }

  /**
   * End of stream: held-back text is released; an unclosed block still counts when it
   * parses. One that does not, in an answer the output limit `cut`, is the call the limit
   * cut: marked so, as native providers mark theirs, the model is told to split it rather
   * than the person shown half a block.
   */
  finish(cut = false): ParsedEvent[] {
    const rest = this.buffer;
    const open = this.open;
    this.buffer = "";
    this.open = undefined;
    if (!open) return rest ? [{ type: "text", delta: rest }] : [];
    const call = parseBlock(rest);
    if (call.invalidArguments === undefined && call.name) return [{ type: "tool_call", call }];
    if (cut) return [{ type: "tool_call", call, cutOff: true }];
    return [{ type: "text", delta: `<${open}>${rest}` }];
  }

  private findOpen(): { at: number; tag: (typeof TAGS)[number] } | undefined {
    let best: { at: number; tag: (typeof TAGS)[number] } | undefined;
    for (const tag of TAGS) {
      const at = this.buffer.indexOf(`<${tag}>`);
      if (at >= 0 && (!best || at < best.at)) best = { at, tag };
    }
    return best;
  }

  private findClose(): { at: number; length: number } | undefined {
    // Models mix the two spellings up; either closing tag ends the block.
    let best: { at: number; length: number } | undefined;
    for (const tag of TAGS) {
      const at = this.buffer.indexOf(`</${tag}>`);
      if (at >= 0 && (!best || at < best.at)) best = { at, length: tag.length + 3 };
    }
    return best;
  }
}

/** Length of the longest suffix of `text` that is a proper prefix of an opening tag. */
function partialOpenerLength(text: string): number {
  const longest = Math.max(...OPENERS.map((o) => o.length)) - 1;
  for (let n = Math.min(longest, text.length); n > 0; n--) {
    const tail = text.slice(text.length - n);
    if (OPENERS.some((o) => o.startsWith(tail))) return n;
  }
  return 0;
}

/** A block's body as a call; a body that is not `{"name", "arguments"}` JSON keeps its raw text. */
export function parseBlock(body: string): ToolCall {
  const raw = stripFence(body.trim());
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { id: newCallId(), name: guessName(raw), arguments: {}, invalidArguments: raw };
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    return { id: newCallId(), name: guessName(raw), arguments: {}, invalidArguments: raw };
  }
  const obj = parsed as Record<string, unknown>;
  const name = typeof obj.name === "string" ? obj.name : "";
  const args = obj.arguments ?? obj.parameters ?? obj.args ?? {};
  // Some models encode the arguments object a second time, as a JSON string.
  const result = typeof args === "string" ? parseArguments(args) : parseArguments(JSON.stringify(args) ?? "");
  return { id: newCallId(), name, ...result };
}

function stripFence(text: string): string {
  const m = /^```(?:json)?\s*([\s\S]*?)\s*```$/.exec(text);
  return m?.[1] ?? text;
}

function guessName(raw: string): string {
  return /"name"\s*:\s*"([^"]+)"/.exec(raw)?.[1] ?? "";
}
