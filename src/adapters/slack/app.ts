import type { Server } from "node:http";
import { App, type Logger, LogLevel, SocketModeReceiver } from "@slack/bolt";
import { ErrorCode, type WebAPICallResult, WebClient, type WebClientOptions } from "@slack/web-api";
import type { Config, Secrets } from "../../config.js";
import { SwitchboardError } from "../../core/errors.js";
import { log } from "../../log.js";
import { RateLimitedError } from "../../runtime/message-ops.js";
import { type BudgetBook, WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { webApiFetch } from "./web-api-fetch.js";
import { isSlackWrite, slackBuckets, slackDefaults, slackWritePolicy } from "./write-policy.js";

export interface SlackAppOptions {
  /**
   * Socket Mode waits this long (times the failures in a row) before reconnecting after
   * a `disconnect`; the SDK default is 5 s. The SDK also drops the connection when a pong
   * is later than this, so it must outlast the event loop's worst stall. Tests shorten it.
   */
  reconnectDelayMs?: number;
  /** HTTP mode: listen on this host (default all interfaces). */
  host?: string;
}

/** Bolt's logger interface on top of our pino logger (Bolt would print to the console). */
export function boltLogger(name = "slack"): Logger {
  const child = log.child({ module: name });
  let level = LogLevel.INFO;
  const text = (msg: unknown[]) => msg.map((m) => (typeof m === "string" ? m : String(m))).join(" ");
  return {
    debug: (...msg: unknown[]) => child.debug(text(msg)),
    info: (...msg: unknown[]) => child.info(text(msg)),
    // Bolt logs reconnects and closed sockets as errors; they are routine here.
    warn: (...msg: unknown[]) => child.warn(text(msg)),
    error: (...msg: unknown[]) => child.warn(text(msg)),
    setLevel: (l: LogLevel) => {
      level = l;
    },
    getLevel: () => level,
    setName: () => undefined,
  };
}

/**
 * The writes client: every write call goes through the workspace's write scheduler (a
 * call made inside a granted reply write passes straight through), and each failed call
 * is reported (for /metrics: 429 or other) before its caller sees it.
 */
export class ReportingWebClient extends WebClient {
  constructor(
    token: string,
    options: WebClientOptions,
    private readonly report?: (rateLimited: boolean) => void,
    readonly scheduler: WriteScheduler = new WriteScheduler(slackWritePolicy, "slack"),
    /**
     * Reads too go through the scheduler, each method within its tier. A client of reads
     * sets it: Bolt's own client pauses every call on any 429 (web-api pauses its whole
     * queue for the Retry-After), so one busy method, say the thread reads of twenty turns
     * taken over at once, would hold up every name lookup and every thread seed.
     */
    private readonly paceReads = false,
  ) {
    super(token, options);
  }

  override async apiCall(method: string, options?: Record<string, unknown>): Promise<WebAPICallResult> {
    const read = !isSlackWrite(method);
    if (read && !this.paceReads) return this.call(method, options);
    // A read made inside a granted write (a reply taken over looks up what it posted) is
    // still paced: passing straight through, it spent the method's tier unseen and met 429s.
    const ctx = read ? undefined : this.scheduler.callContext();
    if (ctx?.granted) {
      this.scheduler.passedThrough(ctx, method);
      return this.call(method, options);
    }
    const { lane, ...defaults } = slackDefaults(method);
    try {
      return await this.scheduler.run({
        lane: ctx?.lane ?? lane,
        buckets: slackBuckets(method, options),
        ...defaults,
        ...(ctx
          ? withoutUndefined({
              dropAfterMs: ctx.dropAfterMs,
              now: ctx.now,
              signal: ctx.signal,
              requeue: ctx.requeue,
              since: ctx.since,
            })
          : {}),
        what: method,
        run: async () => {
          try {
            return await this.call(method, options);
          } catch (err) {
            const e = err as { code?: string; retryAfter?: number };
            if (e?.code === ErrorCode.RateLimitedError) {
              throw new RateLimitedError((e.retryAfter ?? 1) * 1000, { cause: err });
            }
            throw err;
          }
        },
      });
    } catch (err) {
      // Callers see Slack's own error, as from any WebClient.
      throw err instanceof RateLimitedError && err.cause ? err.cause : err;
    }
  }

  private async call(method: string, options?: Record<string, unknown>): Promise<WebAPICallResult> {
    try {
      return await super.apiCall(method, options);
    } catch (err) {
      try {
        this.report?.((err as { code?: string }).code === ErrorCode.RateLimitedError);
      } catch {
        // Counting must never change what the caller sees.
      }
      throw err;
    }
  }
}

function withoutUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export interface SlackConnection {
  app: App;
  /**
   * Writes: through the workspace's write scheduler, automatic retries off, a 429 put back
   * in line by the scheduler (a 429 wrote nothing), never retried blindly otherwise.
   */
  writes: ReportingWebClient;
  /** Reads (history, users): the SDK's retries are harmless there. */
  reads: WebClient;
  mode: "socket" | "http";
  start(): Promise<void>;
  stop(): Promise<void>;
  connected(): boolean;
}

/** The Bolt app: Socket Mode with an app token, else the HTTP receiver on `/slack/events`. */
export function createSlackConnection(
  config: Config,
  secrets: Secrets,
  opts: SlackAppOptions = {},
  onWriteError?: (rateLimited: boolean) => void,
  /** The workspace's budgets, shared with the other replicas; this process's own when not given. */
  budgets?: BudgetBook,
): SlackConnection {
  const token = secrets.slackBotToken;
  if (!token) throw new SwitchboardError("config_invalid", "SLACK_BOT_TOKEN is not set.");
  const slackApiUrl = secrets.slackApiUrl ?? "https://slack.com/api/";
  const logger = boltLogger();
  // Every client's calls through web-api-fetch.ts (which says why), Bolt's and Socket Mode's too.
  const clientOptions = { slackApiUrl, logger, fetch: webApiFetch };
  // Initialised in start(): Bolt's own auth.test would otherwise run at construction, and a
  // refused token would surface as an unhandled rejection instead of our sentence. No
  // conversation store: sessions are ours, and Bolt's in-memory one made and threw away an
  // Error on every event of a conversation it had never stored (all of them).
  const boltOptions = { logger, clientOptions, deferInitialization: true, convoStore: false } as const;
  const writes = new ReportingWebClient(
    token,
    {
      slackApiUrl,
      fetch: webApiFetch,
      logger: boltLogger("slack-writes"),
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
    },
    onWriteError,
    new WriteScheduler(budgets ?? slackWritePolicy, "slack"),
  );
  // The same scheduler, so reads share the workspace's budgets (and the other replicas').
  const reads = new ReportingWebClient(
    token,
    {
      slackApiUrl,
      fetch: webApiFetch,
      logger: boltLogger("slack-reads"),
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
    },
    undefined,
    writes.scheduler,
    true,
  );
  let connected = false;

  if (secrets.slackAppToken) {
    const receiver = new SocketModeReceiver({
      appToken: secrets.slackAppToken,
      logger,
      clientPingTimeout: opts.reconnectDelayMs,
      installerOptions: { clientOptions },
    });
    receiver.client.on("connected", () => {
      connected = true;
    });
    receiver.client.on("disconnected", () => {
      connected = false;
    });
    receiver.client.on("reconnecting", () => {
      connected = false;
    });
    const app = new App({ token, receiver, socketMode: true, ...boltOptions });
    return {
      app,
      writes,
      reads,
      mode: "socket",
      async start() {
        await app.init();
        await app.start();
        connected = true;
      },
      async stop() {
        connected = false;
        await app.stop();
      },
      connected: () => connected,
    };
  }

  if (!secrets.slackSigningSecret) {
    throw new SwitchboardError(
      "config_invalid",
      "Slack needs SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (HTTP mode) besides SLACK_BOT_TOKEN.",
    );
  }
  const app = new App({
    token,
    signingSecret: secrets.slackSigningSecret,
    endpoints: "/slack/events",
    ...boltOptions,
  });
  let server: Server | undefined;
  return {
    app,
    writes,
    reads,
    mode: "http",
    async start() {
      const listen = opts.host ? { port: config.slack.port, host: opts.host } : config.slack.port;
      await app.init();
      server = (await app.start(listen)) as Server;
      connected = true;
    },
    async stop() {
      connected = false;
      if (server) await app.stop();
      server = undefined;
    },
    connected: () => connected,
  };
}
