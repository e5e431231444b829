import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { log } from "../../../src/log.js";
import {
  recordAnthropic,
  sendAnthropicError,
  sendAnthropicModels,
  writeAnthropicCut,
  writeAnthropicReply,
} from "./anthropic.js";
import {
  recordOpenAi,
  sendOpenAiError,
  sendOpenAiModels,
  writeOpenAiCut,
  writeOpenAiReply,
} from "./openai.js";
import { echoTurn, planReply } from "./script.js";
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

/**
 * One loopback HTTP server speaking both the OpenAI Chat Completions and the Anthropic
 * Messages protocols, answering from a FIFO of scripted turns, then a responder, then an echo.
 */
export class LlmEmulator {
  readonly url: string;
  readonly openaiBaseUrl: string;
  readonly anthropicBaseUrl: string;
  readonly requests: RecordedRequest[] = [];
  private readonly queue: ScriptedTurn[] = [];
  private responder: Responder | undefined;

  private constructor(
    private readonly server: Server,
    port: number,
    responder: Responder | undefined,
  ) {
    this.url = `http://127.0.0.1:${port}`;
    this.openaiBaseUrl = `${this.url}/v1`;
    this.anthropicBaseUrl = this.url;
    this.responder = responder;
  }

  static async start(opts: { responder?: Responder; port?: number } = {}): Promise<LlmEmulator> {
    let emulator: LlmEmulator | undefined;
    const server = createServer((req, res) => {
      emulator?.handle(req, res).catch((err: unknown) => {
        log.error({ err }, "llm emulator: request failed");
        if (!res.headersSent) sendOpenAiError(res, 500, "emulator failure");
        else res.destroy();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(opts.port ?? 0, "127.0.0.1", () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    emulator = new LlmEmulator(server, port, opts.responder);
    return emulator;
  }

  enqueue(...turns: ScriptedTurn[]): void {
    this.queue.push(...turns);
  }

  setResponder(fn: Responder | undefined): void {
    this.responder = fn;
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
    this.requests.push(recorded);

    let turn: ScriptedTurn;
    try {
      turn = this.queue.shift() ?? (this.responder ? await this.responder(recorded) : echoTurn(recorded));
    } catch (err) {
      return sendError(res, protocol, 500, `responder failed: ${(err as Error).message}`);
    }
    const idPrefix = protocol === "openai" ? "call_" : "toolu_";
    if (isErrorTurn(turn)) {
      return sendError(res, protocol, turn.error.status, turn.error.message, turn.error.retryAfter);
    }
    if (isCutTurn(turn)) {
      const plan = planReply({ text: turn.cut.text }, recorded, idPrefix);
      const write = protocol === "openai" ? writeOpenAiCut : writeAnthropicCut;
      return write(res, recorded, plan, turn.cut.afterChars);
    }
    const plan = planReply(turn, recorded, idPrefix);
    return protocol === "openai"
      ? writeOpenAiReply(res, recorded, plan)
      : writeAnthropicReply(res, recorded, plan);
  }
}
