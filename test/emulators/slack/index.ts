import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Deliverer, type Delivery, type HttpTarget } from "./delivery.js";
import {
  appMentionEvent,
  assistantThreadStartedEvent,
  eventCallback,
  messageChangedEvent,
  messageDeletedEvent,
  messageEvent,
  slashCommandPayload,
} from "./events.js";
import { bearer, type Params, parseParams, readBody, sendJson, str } from "./http-util.js";
import { type EmuView, issueTrigger } from "./modals.js";
import { RateLimiter, type RateLimitOptions } from "./rate-limit.js";
import { ResponseUrls } from "./response-urls.js";
import { BOT_USER_ID, type EmuFile, type EmuMessage, SlackState } from "./state.js";
import { WebApi, type WebApiLimits } from "./web-api.js";
import { sessionKey } from "./web-api-agents.js";

export type { Delivery } from "./delivery.js";
export type { EmuTrigger, EmuView, ModalJson, TriggerSource } from "./modals.js";
export { type RateLimitOptions, SLACK_PER_CHANNEL_LIMITS } from "./rate-limit.js";
export type { EmuFile, EmuMessage } from "./state.js";
export { BOT_ID, BOT_USER_ID, TEAM_ID } from "./state.js";
export { type Truthy, waitFor } from "./wait.js";

/** Slack: a trigger_id is valid for 3 s (views.open docs; PLATFORMS.md). */
export const TRIGGER_TTL_MS = 3_000;

export interface SlackEmulatorOptions {
  rateLimits?: Partial<RateLimitOptions>;
  limits?: Partial<WebApiLimits>;
  /**
   * How long Slack waits for an ack (default 3,000 ms): events are then redelivered, slash
   * commands and interactions fail ("operation_timeout") and their late acks are ignored.
   */
  ackTimeoutMs?: number;
  maxRetries?: number;
  /** Deliver the bot's own posts, edits and deletions back as `message` events (default true). */
  echoBotMessages?: boolean;
  /** A channel mention also arrives as a `message` event, as with `message.channels` (default true). */
  mentionAlsoAsMessage?: boolean;
  signingSecret?: string;
  /** How long a trigger_id can open or push a view (Slack: 3,000 ms, then expired_trigger_id). */
  triggerTtlMs?: number;
  /** How long an assistant thread's status shows without a message (Slack: 2 minutes). */
  assistantStatusTimeoutMs?: number;
}

export interface MessageOptions {
  threadTs?: string;
  files?: { name: string; mimetype: string; bytes: Uint8Array }[];
  /** Deliver the same event this many times (Slack's duplicate deliveries). */
  times?: number;
}

export interface SlashHandle {
  /** `delivery.failed` is "operation_timeout" when the app did not ack within `ackTimeoutMs`. */
  delivery: Delivery;
  /** What the app acked with (its immediate answer), once acked; undefined when the ack came too late. */
  ack: Promise<unknown>;
  responseUrl: string;
}

export class SlackEmulator {
  readonly state = new SlackState();
  readonly rates: RateLimiter;
  readonly api: WebApi;
  readonly delivery: Deliverer;
  readonly signingSecret: string;
  /** How long a trigger_id can open or push a view (Slack: 3 s, then `expired_trigger_id`). */
  readonly triggerTtlMs: number;
  private readonly server: Server;
  private port = 0;
  private readonly echo: boolean;
  private readonly mentionAlsoAsMessage: boolean;
  private readonly responseUrls: ResponseUrls;
  /** Web API methods Slack is slow to answer (ms before the answer goes): a slow Slack, or a lookup to be caught in. */
  readonly slow = new Map<string, number>();

  private constructor(options: SlackEmulatorOptions) {
    this.rates = new RateLimiter(options.rateLimits);
    this.echo = options.echoBotMessages ?? true;
    this.mentionAlsoAsMessage = options.mentionAlsoAsMessage ?? true;
    this.signingSecret = options.signingSecret ?? "emulator-signing-secret";
    this.triggerTtlMs = options.triggerTtlMs ?? TRIGGER_TTL_MS;
    if (options.assistantStatusTimeoutMs !== undefined)
      this.state.statusTimeoutMs = options.assistantStatusTimeoutMs;
    this.delivery = new Deliverer({
      ackTimeoutMs: options.ackTimeoutMs ?? 3_000,
      maxRetries: options.maxRetries ?? 3,
    });
    this.api = new WebApi(this.state, this.rates, {
      baseUrl: () => this.baseUrl,
      socketUrl: () => `ws://127.0.0.1:${this.port}/socket?ticket=${Date.now()}`,
      echo: (kind, m, previous) => this.echoBotWrite(kind, m, previous),
      triggerTtlMs: () => this.triggerTtlMs,
    });
    this.api.limits = { ...this.api.limits, ...options.limits };
    this.responseUrls = new ResponseUrls(this.state, (m) => this.echoBotWrite("posted", m));
    this.server = createServer((req, res) => {
      this.route(req, res).catch((err: unknown) => {
        sendJson(res, 500, { ok: false, error: "internal_error", detail: String(err) });
      });
    });
    this.server.on("upgrade", (req, socket, head) => {
      if (req.url?.startsWith("/socket")) this.delivery.upgrade(req, socket, head);
      else socket.destroy();
    });
  }

  static async start(options: SlackEmulatorOptions = {}): Promise<SlackEmulator> {
    const emulator = new SlackEmulator(options);
    await new Promise<void>((resolve) => emulator.server.listen(0, "127.0.0.1", resolve));
    emulator.port = (emulator.server.address() as AddressInfo).port;
    return emulator;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  /** For `SLACK_API_URL` / `clientOptions.slackApiUrl`. */
  get apiUrl(): string {
    return `${this.baseUrl}/api/`;
  }
  get botToken(): string {
    return this.api.botToken;
  }
  get appToken(): string {
    return this.api.appToken;
  }

  /** Deliver events as signed HTTP requests to `url` instead of over Socket Mode. */
  useHttp(url: string): void {
    const target: HttpTarget = { url, signingSecret: this.signingSecret };
    this.delivery.httpTarget = target;
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.baseUrl);
    const [, root, id] = url.pathname.split("/");
    if (req.method === "GET" && root === "files" && id) return this.download(req, res, id);
    const body = await readBody(req);
    if (root === "api" && id) {
      const params = await parseParams(req, body);
      const result = this.api.handle(id, params, bearer(req, params));
      // Handled (and listed in `api.calls`) when it arrives, answered late.
      const slowBy = this.slow.get(id);
      if (slowBy) await new Promise((r) => setTimeout(r, slowBy));
      return result.lost ? void res.destroy() : sendJson(res, result.status, result.body, result.headers);
    }
    if (root === "upload" && id) {
      const params = (req.headers["content-type"] ?? "").includes("multipart/")
        ? await parseParams(req, body)
        : {};
      const bytes = params.body instanceof Uint8Array ? params.body : new Uint8Array(body);
      const ok = this.api.receiveUpload(id, bytes);
      res.writeHead(ok ? 200 : 404, { "content-type": "text/plain" });
      return void res.end(ok ? `OK - ${bytes.byteLength}` : "not found");
    }
    if (root === "response" && id) return this.responseUrls.respond(res, id, await parseParams(req, body));
    sendJson(res, 404, { ok: false, error: "unknown_path" });
  }

  /** Without the bot token Slack answers file downloads with its HTML login page (status 200). */
  private download(req: IncomingMessage, res: ServerResponse, id: string): void {
    const file = this.state.files.get(id);
    if (req.headers.authorization !== `Bearer ${this.botToken}`) {
      res.writeHead(200, { "content-type": "text/html" });
      return void res.end("<html><body>Sign in to Slack</body></html>");
    }
    if (!file) return void sendJson(res, 404, { ok: false, error: "file_not_found" });
    res.writeHead(200, { "content-type": file.mimetype, "content-length": file.bytes.byteLength });
    res.end(Buffer.from(file.bytes));
  }

  private echoBotWrite(kind: "posted" | "changed" | "deleted", m: EmuMessage, previous?: EmuMessage): void {
    if (!this.echo) return;
    const channel = this.state.channels.get(m.channel);
    const event =
      kind === "posted"
        ? messageEvent(m, channel, this.baseUrl)
        : kind === "changed"
          ? messageChangedEvent(m, previous, channel, this.baseUrl)
          : messageDeletedEvent(m, channel, this.baseUrl);
    this.delivery.deliver("events_api", eventCallback(event));
  }

  private userFiles(files: MessageOptions["files"]): EmuFile[] {
    return (files ?? []).map((f, i) => {
      const id = `FU${Date.now().toString(36)}${i}${this.state.files.size}`;
      const file: EmuFile = {
        id,
        name: f.name,
        title: f.name,
        mimetype: f.mimetype,
        size: f.bytes.byteLength,
        bytes: f.bytes,
        shared: true,
      };
      this.state.files.set(id, file);
      return file;
    });
  }

  private write(channel: string, user: string, text: string, opts: MessageOptions): EmuMessage {
    if (!this.state.channels.has(channel)) throw new Error(`emulator: unknown channel ${channel}`);
    const { team } = this.state.user(user);
    const files = this.userFiles(opts.files);
    return this.state.addMessage({
      channel,
      user,
      ...(team ? { team } : {}),
      text,
      thread_ts: opts.threadTs,
      subtype: files.length ? "file_share" : undefined,
      files,
    });
  }

  /** `user` belongs to another organization's workspace `team`, as in a Slack Connect channel. */
  externalUser(user: string, team: string): void {
    this.state.user(user).team = team;
  }

  /** A user mentions the bot in a channel: `app_mention` and (by default) `message`. */
  mention(channel: string, user: string, text: string, opts: MessageOptions = {}): EmuMessage {
    const full = text.includes(`<@${BOT_USER_ID}>`) ? text : `<@${BOT_USER_ID}> ${text}`;
    const m = this.write(channel, user, full, opts);
    this.delivery.deliver("events_api", eventCallback(appMentionEvent(m, this.baseUrl)), opts.times);
    if (this.mentionAlsoAsMessage) this.deliverMessage(m, opts.times);
    return m;
  }

  /** A user writes in a channel without mentioning the bot. */
  post(channel: string, user: string, text: string, opts: MessageOptions = {}): EmuMessage {
    const m = this.write(channel, user, text, opts);
    this.deliverMessage(m, opts.times);
    return m;
  }

  /** A user writes to the bot in a direct message. */
  dm(user: string, text: string, opts: MessageOptions = {}): EmuMessage {
    const channel = this.state.dmChannel(user);
    const m = this.write(channel.id, user, text, opts);
    this.deliverMessage(m, opts.times);
    return m;
  }

  /** Another app's bot posts (`bot_id` set). */
  botPost(
    channel: string,
    text: string,
    opts: MessageOptions & { botId?: string; user?: string } = {},
  ): EmuMessage {
    const { id: user, botId } = this.state.botUser(opts.user ?? "U_OTHERBOT", opts.botId ?? "B_OTHER");
    const m = this.state.addMessage({
      channel,
      user,
      bot_id: botId,
      text,
      thread_ts: opts.threadTs,
    });
    this.deliverMessage(m, opts.times);
    return m;
  }

  private deliverMessage(m: EmuMessage, times?: number): void {
    const event = messageEvent(m, this.state.channels.get(m.channel), this.baseUrl);
    this.delivery.deliver("events_api", eventCallback(event), times);
  }

  /**
   * A person presses Slack's stop button on an agent session: Slack stops the app's streams
   * in the thread itself and sends `agent_session_stopped` with their timestamps. The
   * session's status is left as it was: moving it on is the app's job. Slack shows the
   * button only while the session is `processing` (docs.slack.dev, agent_session_stopped),
   * so a press at any other time throws: no one could have made it.
   */
  stopAgentSession(user: string, channel: string, threadTs: string): Delivery[] {
    const status = this.api.sessions.get(sessionKey(channel, threadTs))?.status ?? "none";
    if (status !== "processing")
      throw new Error(`No stop button to press: the agent session of ${channel}:${threadTs} is ${status}`);
    this.state.user(user);
    const streaming = this.state.messages.filter(
      (m) => m.channel === channel && (m.thread_ts ?? m.ts) === threadTs && m.stream?.state === "streaming",
    );
    for (const m of streaming) if (m.stream) m.stream.state = "stopped";
    return this.deliverEvent({
      type: "agent_session_stopped",
      channel,
      user,
      thread_ts: threadTs,
      streaming_message_ts: streaming.map((m) => m.ts),
      event_ts: this.state.clock.next(),
    });
  }

  /** Delivers any event (wrapped in `event_callback`) `times` times with the same event_id. */
  deliverEvent(event: Params, times = 1): Delivery[] {
    return this.delivery.deliver("events_api", eventCallback(event), times);
  }

  /** The user opens a new chat in the "Agents & AI Apps" pane. */
  startAssistantThread(
    user: string,
    opts: { contextChannel?: string } = {},
  ): { channel: string; threadTs: string } {
    this.state.user(user);
    const channel = this.state.dmChannel(user).id;
    const root = this.state.addMessage({
      channel,
      user: BOT_USER_ID,
      bot_id: "B_BOT",
      subtype: "assistant_app_thread",
      text: "",
    });
    this.delivery.deliver(
      "events_api",
      eventCallback(assistantThreadStartedEvent(user, channel, root.ts, opts.contextChannel)),
    );
    return { channel, threadTs: root.ts };
  }

  /**
   * The user opens the app's Messages tab (its DM): an agent app (`agent_view`) learns of
   * it from `app_home_opened` with `tab: "messages"`, not `assistant_thread_started`.
   * Returns the DM channel.
   */
  openMessagesTab(user: string): string {
    this.state.user(user);
    const channel = this.state.dmChannel(user).id;
    this.deliverEvent({
      type: "app_home_opened",
      user,
      channel,
      tab: "messages",
      event_ts: this.state.clock.next(),
    });
    return channel;
  }

  /** A user runs a slash command in a channel. */
  slash(command: string, text: string, user: string, channel = "C1"): SlashHandle {
    const info = this.state.user(user);
    const id = this.responseUrls.issue(channel, user);
    const responseUrl = `${this.baseUrl}/response/${id}`;
    const payload = slashCommandPayload({
      command,
      text,
      user,
      userName: info.name,
      channel,
      channelName: this.state.channels.get(channel)?.name ?? channel,
      responseUrl,
      triggerId: issueTrigger(this.state, user, "slash_command"),
    });
    const [delivery] = this.delivery.deliver("slash_commands", payload);
    if (!delivery) throw new Error("emulator: no delivery");
    const ack = delivery.done.then((payload) => {
      if (delivery.failed) {
        // What Slack shows the user when the app did not ack within 3 s; a late ack is dropped.
        const text = `${command} failed with the error "${delivery.failed}"`;
        this.state.ephemerals.push({ channel, user, text, via: "slack", shown: true });
        return undefined;
      }
      const p = payload as Params | undefined;
      const text = p ? str(p, "text") : undefined;
      if (text !== undefined) this.state.ephemerals.push({ channel, user, text, via: "ack", shown: true });
      return payload;
    });
    return { delivery, ack, responseUrl };
  }

  /** The modal view `user` sees now (the top of their view stack), with the app's field errors. */
  openView(user: string): EmuView | undefined {
    return this.state.openView(user);
  }

  /** The root and replies of a thread, oldest first. */
  threadMessages(channel: string, ts: string): EmuMessage[] {
    return this.state.thread(channel, ts);
  }

  /** What the bot wrote in a thread (the root excluded). */
  botReplies(channel: string, ts: string): EmuMessage[] {
    return this.state.thread(channel, ts).filter((m) => m.ts !== ts && m.user === BOT_USER_ID);
  }

  disconnect(reason: "warning" | "refresh_requested" | "link_disabled" = "refresh_requested"): void {
    this.delivery.disconnect(reason);
  }

  async stop(): Promise<void> {
    await this.delivery.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
