import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { log } from "../../../src/log.js";
import {
  ANTHROPIC_MAX_REQUEST_BYTES,
  recordAnthropic,
  sendAnthropicError,
  sendAnthropicModels,
  writeAnthropicCut,
  writeAnthropicReply,
} from "./anthropic.js";
import {
  charsOver4,
  contextWindowOf,
  DEFAULT_CONTEXT_WINDOW,
  DEFAULT_CONTEXT_WINDOWS,
  o200kTokens,
  overflowMessage,
  promptTokens,
  requestedOutput,
  type TokenCounter,
} from "./context.js";
import {
  recordOpenAi,
  sendOpenAiError,
  sendOpenAiModels,
  writeOpenAiCut,
  writeOpenAiReply,
} from "./openai.js";
import { sendTpmTooLarge, tpmTooLargeMessage } from "./openai-rate-limits.js";
import { openAiRequestRefusal } from "./openai-rules.js";
import { DEFAULT_OUTPUT_CAPS, outputCapRefusal } from "./output-caps.js";
import { echoTurn, planReply } from "./script.js";
import { anthropicToolRefusal, openAiToolRefusal } from "./tools.js";
import { isCutTurn, isErrorTurn, type RecordedRequest, type Responder, type ScriptedTurn } from "./types.js";
import { readBody } from "./wire.js";

type Protocol = RecordedRequest["protocol"];

const bearer = (v: string | undefined): string => (v?.match(/^Bearer\s+(\S+)/i)?.[1] ?? "").trim();
const header = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/** The OpenAI SDK sends only `Authorization: Bearer`; the Anthropic SDK 1.x does too, older clients `x-api-key`. */
function hasKey(req: IncomingMessage, protocol: Protocol): boolean {
  if (bearer(header(req, "authorization"))) return true;
  return protocol === "anthropic" && Boolean(header(req, "x-api-key")?.trim());
}

function sendError(
  res: ServerResponse,
  protocol: Protocol,
  status: number,
  message?: string,
  retryAfter?: number,
) {
  if (protocol === "openai") sendOpenAiError(res, status, message, retryAfter);
  else sendAnthropicError(res, status, message, retryAfter);
}

export interface LlmEmulatorOptions {
  responder?: Responder;
  port?: number;
  /**
   * Context windows in tokens by model id (exact id, else the longest matching prefix),
   * over `DEFAULT_CONTEXT_WINDOWS` (gpt-4o 128k, claude-* 200k, ...). A request whose
   * prompt, or prompt plus requested output, does not fit is refused with the provider's
   * 400, before any scripted turn is used.
   */
  contextWindows?: Record<string, number>;
  /** For models matched by nothing in `contextWindows` (default 128,000). */
  defaultContextWindow?: number;
  /**
   * Output caps in tokens by model id (exact id, else the longest matching prefix), over
   * `DEFAULT_OUTPUT_CAPS` (gpt-4o 16,384, claude-sonnet-4 64,000, ...). A request for more
   * output is refused with the provider's 400; models matched by nothing are unchecked.
   */
  outputCaps?: Record<string, number>;
  /**
   * How prompts are counted (default: o200k for the OpenAI protocol, characters / 4
   * rounded up for Anthropic's; see `context.ts`).
   */
  countTokens?: TokenCounter;
  /**
   * OpenAI protocol: the account's tokens-per-minute limit by exact model id (OpenAI limits
   * gpt-4o and gpt-4o-mini apart, so no prefix matching). A request whose prompt plus
   * requested output is over it is refused with the API's 429 "Request too large" (see
   * `openai-rate-limits.ts`). None by default.
   */
  tokensPerMinute?: Record<string, number>;
}

/**
 * One loopback HTTP server speaking both the OpenAI Chat Completions and the Anthropic
 * Messages protocols, answering from a FIFO of scripted turns, then a responder, then an echo.
 * Every request is held to its model's context window, as the providers do.
 */
export class LlmEmulator {
  readonly url: string;
  readonly openaiBaseUrl: string;
  readonly anthropicBaseUrl: string;
  readonly requests: RecordedRequest[] = [];
  private readonly queue: ScriptedTurn[] = [];
  private responder: Responder | undefined;
  private readonly windows: Record<string, number>;
  private readonly defaultWindow: number;
  private readonly outputCaps: Readonly<Record<string, number>>;
  private readonly counter: TokenCounter | undefined;
  private readonly tpm: ReadonlyMap<string, number>;

  private constructor(
    private readonly server: Server,
    port: number,
    opts: LlmEmulatorOptions,
  ) {
    this.url = `http://127.0.0.1:${port}`;
    this.openaiBaseUrl = `${this.url}/v1`;
    this.anthropicBaseUrl = this.url;
    this.responder = opts.responder;
    this.windows = { ...DEFAULT_CONTEXT_WINDOWS, ...opts.contextWindows };
    this.defaultWindow = opts.defaultContextWindow ?? DEFAULT_CONTEXT_WINDOW;
    this.outputCaps = { ...DEFAULT_OUTPUT_CAPS, ...opts.outputCaps };
    this.counter = opts.countTokens;
    this.tpm = new Map(Object.entries(opts.tokensPerMinute ?? {}));
  }

  static async start(opts: LlmEmulatorOptions = {}): Promise<LlmEmulator> {
    let emulator: LlmEmulator | undefined;
    const server = createServer((req, res) => {
      emulator?.handle(req, res).catch((err: unknown) => {
        log.error({ err }, "llm emulator: request failed");
        if (!res.headersSent) sendOpenAiError(res, 500, "emulator failure");
        else res.destroy();
      });
    });
    // The SDKs keep connections open between requests. A test that builds a request of
    // tens of megabytes (images) can hold the event loop it shares with this server past
    // Node's 5 s default, and the server then drops the idle connection just as the request
    // arrives on it (ECONNRESET): a race of the emulator's, which no real API shows as often.
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(opts.port ?? 0, "127.0.0.1", () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    emulator = new LlmEmulator(server, port, opts);
    return emulator;
  }

  enqueue(...turns: ScriptedTurn[]): void {
    this.queue.push(...turns);
  }

  setResponder(fn: Responder | undefined): void {
    this.responder = fn;
  }

  /** Sets the context window of `model` (an exact id or a prefix) from now on; `reset()` keeps it. */
  setContextWindow(model: string, tokens: number): void {
    this.windows[model] = tokens;
  }

  contextWindow(model: string): number {
    return contextWindowOf(model, this.windows, this.defaultWindow);
  }

  /** Prompt tokens of `req` as the emulator counts them for its protocol. */
  countPrompt(req: RecordedRequest): number {
    const count = this.counter ?? (req.protocol === "openai" ? o200kTokens : charsOver4);
    return promptTokens(req, count);
  }

  reset(): void {
    this.queue.length = 0;
    this.responder = undefined;
    this.requests.length = 0;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0];
    // Both SDKs share GET /v1/models; only the Anthropic one sends `anthropic-version`.
    const guessed: Protocol = header(req, "anthropic-version") ? "anthropic" : "openai";
    const route = `${req.method} ${path}`;
    if (route === "POST /v1/chat/completions") return this.generate(req, res, "openai");
    if (route === "POST /v1/messages") return this.generate(req, res, "anthropic");
    if (route === "GET /v1/models") {
      if (!hasKey(req, guessed)) return sendError(res, guessed, 401);
      return guessed === "openai" ? sendOpenAiModels(res) : sendAnthropicModels(res);
    }
    req.resume();
    if (guessed === "openai") sendOpenAiError(res, 404, `Invalid URL (${route})`, undefined, null);
    else sendAnthropicError(res, 404, `Not found: ${route}`);
  }

  private async generate(req: IncomingMessage, res: ServerResponse, protocol: Protocol): Promise<void> {
    const raw = await readBody(req);
    // Anthropic's front (Cloudflare) refuses a body over 32 MB before the API reads it, key or not.
    if (protocol === "anthropic" && Buffer.byteLength(raw) > ANTHROPIC_MAX_REQUEST_BYTES) {
      return sendAnthropicError(res, 413, "Request exceeds the maximum size");
    }
    if (!hasKey(req, protocol)) return sendError(res, protocol, 401);
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return sendError(res, protocol, 400, "The request body is not valid JSON.");
    }
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      return sendError(res, protocol, 400, "The request body must be a JSON object.");
    }
    const bodyRecord = body as Record<string, unknown>;
    const recorded =
      protocol === "openai"
        ? recordOpenAi(bodyRecord, req.headers)
        : recordAnthropic(bodyRecord, req.headers);
    if (typeof recorded === "string") return sendError(res, protocol, 400, recorded);
    const refusal =
      protocol === "openai"
        ? (openAiRequestRefusal(bodyRecord) ?? openAiToolRefusal(bodyRecord.tools))
        : anthropicToolRefusal(bodyRecord.tools);
    if (refusal) {
      if (protocol === "openai")
        return sendOpenAiError(res, 400, refusal.message, undefined, refusal.code, refusal.param);
      return sendAnthropicError(res, 400, refusal.message);
    }
    const overCap = outputCapRefusal(recorded, this.outputCaps);
    if (overCap) {
      if (protocol === "openai")
        return sendOpenAiError(res, 400, overCap.message, undefined, "invalid_value", overCap.param);
      return sendAnthropicError(res, 400, overCap.message);
    }
    recorded.receivedAt = Date.now();
    this.requests.push(recorded);
    // The client hung up before the answer was complete (an aborted request, a Stop).
    res.on("close", () => {
      recorded.endedAt = Date.now();
      if (!res.writableFinished) recorded.abandoned = true;
    });
    recorded.contextWindow = this.contextWindow(recorded.model);
    recorded.promptTokens = this.countPrompt(recorded);
    const tpm = protocol === "openai" ? this.tpm.get(recorded.model) : undefined;
    if (tpm !== undefined) {
      const requested = recorded.promptTokens + (requestedOutput(recorded) ?? 0);
      const tooLarge = tpmTooLargeMessage(recorded.model, tpm, requested);
      if (tooLarge !== undefined) return sendTpmTooLarge(res, tooLarge, tpm);
    }
    recorded.overflow = overflowMessage(
      protocol,
      recorded.contextWindow,
      recorded.promptTokens,
      requestedOutput(recorded),
    );
    if (recorded.overflow !== undefined) {
      return protocol === "openai"
        ? sendOpenAiError(res, 400, recorded.overflow, undefined, "context_length_exceeded", "messages")
        : sendAnthropicError(res, 400, recorded.overflow);
    }

    let turn: ScriptedTurn;
    try {
      turn = this.queue.shift() ?? (this.responder ? await this.responder(recorded) : echoTurn(recorded));
    } catch (err) {
      return sendError(res, protocol, 500, `responder failed: ${(err as Error).message}`);
    }
    const idPrefix = protocol === "openai" ? "call_" : "toolu_";
    if (isErrorTurn(turn)) {
      const { status, message, retryAfter, type, code, shouldRetry } = turn.error;
      const more = {
        ...(type !== undefined ? { type } : {}),
        ...(shouldRetry !== undefined ? { headers: { "x-should-retry": String(shouldRetry) } } : {}),
      };
      if (protocol === "openai") return sendOpenAiError(res, status, message, retryAfter, code, null, more);
      return sendAnthropicError(res, status, message, retryAfter, more);
    }
    if (isCutTurn(turn)) {
      const plan = planReply({ text: turn.cut.text }, recorded, idPrefix);
      const write = protocol === "openai" ? writeOpenAiCut : writeAnthropicCut;
      return write(res, recorded, plan, turn.cut.afterChars, turn.cut.error);
    }
    // Each API has its own way to withhold an answer: a script that uses the other's is a mistake.
    const foreign =
      protocol === "openai"
        ? "refusal" in turn && turn.refusal
        : "contentFilter" in turn && turn.contentFilter;
    if (foreign) {
      const what = protocol === "openai" ? "an Anthropic refusal" : "an OpenAI content_filter";
      return sendError(res, protocol, 500, `scripted ${what} for a ${protocol} request`);
    }
    // A model offered no tools cannot call one: a script that says otherwise would pass a
    // test that a real API never could.
    if (turn.toolCalls?.length && recorded.toolNames.length === 0) {
      const names = turn.toolCalls.map((c) => c.name).join(", ");
      return sendError(res, protocol, 500, `scripted a call of ${names}, but the request offers no tools`);
    }
    const plan = planReply(turn, recorded, idPrefix);
    recorded.reported = plan.usage;
    return protocol === "openai"
      ? writeOpenAiReply(res, recorded, plan)
      : writeAnthropicReply(res, recorded, plan);
  }
}
