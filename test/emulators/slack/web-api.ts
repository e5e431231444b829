import { type Params, str } from "./http-util.js";
import type { RateLimiter } from "./rate-limit.js";
import { BOT_ID, BOT_USER_ID, type SlackState, TEAM_ID } from "./state.js";
import { type AgentSession, agentHandlers } from "./web-api-agents.js";
import { chatHandlers } from "./web-api-chat.js";
import {
  ApiContext,
  ApiError,
  DEFAULT_LIMITS,
  type Handler,
  type WebApiHooks,
  type WebApiLimits,
} from "./web-api-context.js";
import { FileApi, readHandlers } from "./web-api-files.js";
import { streamHandlers } from "./web-api-stream.js";
import { viewHandlers } from "./web-api-views.js";

export { DEFAULT_LIMITS, type WebApiHooks, type WebApiLimits } from "./web-api-context.js";

export interface ApiResult {
  status: number;
  body: Params;
  headers?: Record<string, string>;
  /** The connection is dropped without an answer (see `WebApi.loseAnswer`). */
  lost?: boolean;
}

/** Which calls of a method lose their answer (see `WebApi.loseAnswer`). */
export interface LostAnswers {
  /** How many (default 1). */
  times?: number;
  /** Only the calls it picks (and counts). */
  when?: (params: Params) => boolean;
  /** The connection drops before the call is applied (default: after). */
  unapplied?: boolean;
}

export interface WebApiCall {
  method: string;
  params: Params;
  at: number;
  ok: boolean;
  error?: string;
  /** The message a successful call created (chat.postMessage, chat.startStream). */
  ts?: string;
  /** Its answer never reached the caller (see `WebApi.loseAnswer`); `ok` says whether it was applied. */
  lost?: boolean;
}

/** The Web API methods the bot uses, behind token checks, rate limits and switchable refusals. */
export class WebApi {
  limits: WebApiLimits = { ...DEFAULT_LIMITS };
  botToken = "xoxb-emulator";
  appToken = "xapp-emulator";
  /** Every call, in order, for tests and benchmarks. */
  readonly calls: WebApiCall[] = [];
  private readonly refusals = new Map<
    string,
    { error: string; times: number; when: ((params: Params) => boolean) | undefined }
  >();
  private readonly losses = new Map<string, Required<Omit<LostAnswers, "when">> & LostAnswers>();
  private readonly files: FileApi;
  private readonly handlers: Record<string, Handler>;
  /** Agent sessions by `channel:thread_ts` (agents.sessions.*). */
  readonly sessions = new Map<string, AgentSession>();

  constructor(
    state: SlackState,
    private readonly rates: RateLimiter,
    private readonly hooks: WebApiHooks,
  ) {
    const ctx = new ApiContext(state, hooks, () => this.limits);
    this.files = new FileApi(ctx);
    this.handlers = {
      "auth.test": () => ({
        url: "https://emulator.slack.com/",
        team: "Emulator",
        user: "switchboard",
        team_id: TEAM_ID,
        user_id: BOT_USER_ID,
        bot_id: BOT_ID,
        is_enterprise_install: false,
      }),
      ...chatHandlers(ctx),
      ...streamHandlers(ctx),
      ...this.files.handlers(),
      ...readHandlers(ctx),
      ...viewHandlers(ctx),
      ...agentHandlers(ctx, this.sessions),
    };
  }

  /**
   * Answers `method` with `ok:false, error` (e.g. `not_allowed_token_type` for
   * chat.startStream) the next `times` calls (default: until `allow`), as a workspace
   * whose plan or token does not allow it would. Nothing changes on a refused call.
   * `when`: only the calls it picks are refused (and counted), as a workspace refuses a
   * kind of block it does not allow.
   */
  refuse(
    method: string,
    error: string,
    times = Number.POSITIVE_INFINITY,
    when?: (params: Params) => boolean,
  ): void {
    this.refusals.set(method, { error, times, when });
  }

  allow(method: string): void {
    this.refusals.delete(method);
  }

  /**
   * Applies the next calls of `method` (see `LostAnswers`) and then drops the connection
   * without an answer, as a connection cut or a timeout after Slack made the change does:
   * the caller sees a network error and cannot tell whether it was applied.
   */
  loseAnswer(method: string, { times = 1, when, unapplied = false }: LostAnswers = {}): void {
    this.losses.set(method, { times, unapplied, ...(when ? { when } : {}) });
  }

  handle(method: string, params: Params, token: string | undefined): ApiResult {
    const call: WebApiCall = { method, params, at: Date.now(), ok: false };
    this.calls.push(call);
    const expected = method === "apps.connections.open" ? this.appToken : this.botToken;
    if (!token) return this.error(call, "not_authed");
    if (token !== expected) return this.error(call, "invalid_auth");
    if (method === "apps.connections.open") {
      call.ok = true;
      return { status: 200, body: { ok: true, url: this.hooks.socketUrl() } };
    }
    const handler = this.handlers[method];
    if (!handler) return this.error(call, "unknown_method");
    const decision = this.rates.check(method, str(params, "channel") ?? str(params, "channel_id"));
    if (decision.limited) {
      call.error = "ratelimited";
      return {
        status: 429,
        body: { ok: false, error: "ratelimited" },
        headers: { "retry-after": String(decision.retryAfter) },
      };
    }
    const refusal = this.refusals.get(method);
    if (refusal && refusal.times > 0 && (!refusal.when || refusal.when(params))) {
      refusal.times -= 1;
      return this.error(call, refusal.error);
    }
    const loss = this.losses.get(method);
    if (!loss || loss.times <= 0 || (loss.when && !loss.when(params)))
      return this.apply(call, handler, params);
    loss.times -= 1;
    call.lost = true;
    return { ...(loss.unapplied ? { status: 0, body: {} } : this.apply(call, handler, params)), lost: true };
  }

  private apply(call: WebApiCall, handler: Handler, params: Params): ApiResult {
    try {
      const body = handler(params);
      call.ok = true;
      if (typeof body.ts === "string") call.ts = body.ts;
      return { status: 200, body: { ok: true, ...body } };
    } catch (err) {
      if (err instanceof ApiError) return this.error(call, err.message, err.extra);
      throw err;
    }
  }

  /** The upload URL's handler: bytes arrive raw or as a multipart part named `body`. */
  receiveUpload(id: string, bytes: Uint8Array): boolean {
    return this.files.receiveUpload(id, bytes);
  }

  private error(call: WebApiCall, error: string, extra: Params = {}): ApiResult {
    call.error = error;
    return { status: 200, body: { ok: false, error, ...extra } };
  }
}
