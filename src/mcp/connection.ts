import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { GetPromptResult, Prompt, ReadResourceResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { log } from "../log.js";
import { DeadlineError, seconds, withDeadline } from "../signals.js";
import { retryDelay, startDeadline } from "./backoff.js";
import { answerElicitations, ELICITATION_CAPABILITY } from "./elicitation.js";
import {
  describeCallFailure,
  describeSlowStart,
  describeStartFailure,
  isRefusedSignIn,
  needsSignIn,
} from "./failures.js";
import type { ServerAuth } from "./oauth/sign-ins.js";
import { OutputChecks } from "./output-check.js";
import { answerBytes } from "./read-buffer.js";
import type { ServerConfig } from "./servers.js";
import { markLost, type Session } from "./session.js";
import { callOnSession } from "./session-call.js";
import { StderrTail } from "./stderr-tail.js";
import { ListedTools, listAllTools } from "./tool-list.js";
import {
  childOf,
  closeClient,
  createTransport,
  followToolList,
  listAllPrompts,
  pidOf,
  watchExit,
} from "./transport.js";
import { watchTransportErrors } from "./transport-errors.js";
import type { ServerState, ServerStatus, ToolCallOptions } from "./types.js";

export interface ConnectionOptions {
  connectTimeoutMs: number;
  callTimeoutMs: number;
  maxRestarts: number;
  clientInfo: { name: string; version: string };
  /** Called whenever state or tools change. */
  onChange: () => void;
  /** Sign-ins of the servers that use OAuth. */
  oauth?: ServerAuth;
  /** Whose sign-in the connection uses: the shared one unless a person's own (per-user servers). */
  owner?: string;
  /** The most the bot reads of one stdio message (mcp.maxAnswerMb); DEFAULT_MAX_ANSWER_MB when unset. */
  maxAnswerMb?: number;
}

export type { CallAnswer } from "./session-call.js";

import type { CallAnswer } from "./session-call.js";

/** A connection that lived this long before dying was healthy: its death starts a new count. */
const STABLE_MS = 30_000;
/** HTTP server errors (5xx) in a row after which a session is made anew. */
const SERVER_ERRORS_BEFORE_RECONNECT = 3;

/** One MCP server: connect, tools, calls, death, and attempts again with back-off until it is back. */
export class ServerConnection {
  state: ServerState;
  error: string | undefined;
  tools: Tool[] = [];
  /** The server's prompts (empty when it offers none), listed at each connect. */
  prompts: Prompt[] = [];
  private session: Session | undefined;
  private failures = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private refreshSeq = 0;
  private readonly listed: ListedTools;
  /** Counts start-up attempts, so that one overtaken by a manual reconnect leaves no trace. */
  private attempt = 0;
  private settleWaiters = new Set<() => void>();
  /** When the next attempt of a server that is down starts (ms since the epoch). */
  private retryAt: number | undefined;
  /** Connected once: a later failure restarts it (`reconnecting`); before, it stays `failed` while it is tried again. */
  private everConnected = false;
  /** Signs in with OAuth and has no sign-in: `failed` (its tools gone) until someone signs in. */
  private awaitingSignIn = false;
  /** Its last start-up was refused the sign-in it had (expired or revoked, and not renewed). */
  private signInRefused = false;
  /** Start-ups in a row that ran out of time: each is given longer (see startDeadline). */
  private slowStarts = 0;
  private readonly outputChecks: OutputChecks;

  constructor(
    readonly config: ServerConfig,
    private readonly opts: ConnectionOptions,
    blocked: boolean,
  ) {
    this.state = blocked ? "blocked" : "connecting";
    this.error = blocked ? "blocked by the configuration (mcp.blockedServers)" : undefined;
    this.outputChecks = new OutputChecks(config.name);
    this.listed = new ListedTools(config);
  }

  get name(): string {
    return this.config.name;
  }

  /** Did not connect for want of a sign-in: none kept, or the server refused the one kept. */
  get needsSignIn(): boolean {
    return this.state !== "connected" && (this.awaitingSignIn || this.signInRefused);
  }

  status(): ServerStatus {
    const pid = this.state === "connected" ? pidOf(this.session?.transport) : undefined;
    const warnings = [...(this.config.warnings ?? []), ...this.listed.problems];
    return {
      name: this.name,
      state: this.state,
      transport: this.config.transport,
      toolCount: this.state === "connected" || this.state === "reconnecting" ? this.tools.length : 0,
      ...(this.error !== undefined && this.state !== "connected" && { error: this.error }),
      ...(this.retryAt !== undefined &&
        this.state !== "connected" && { retryInMs: Math.max(0, this.retryAt - Date.now()) }),
      ...(pid !== undefined && { pid }),
      ...(warnings.length > 0 && { warnings }),
    };
  }

  /**
   * First connection. A failure leaves the server `failed` with a reason and tries again
   * with back-off until it connects (a server started after the bot joins by itself); it
   * never throws.
   */
  async start(): Promise<void> {
    if (this.state === "blocked") return;
    const reason = await this.open();
    if (typeof reason === "string" && !this.closed) this.scheduleRestart(reason);
  }

  /** Manual reconnect: tries once more now, and from a fresh back-off if that fails. */
  async reconnect(): Promise<void> {
    if (this.state === "blocked" || this.closed) return;
    clearTimeout(this.restartTimer);
    this.retryAt = undefined;
    this.failures = 0;
    await this.dropSession("reconnect requested");
    this.setState("connecting", undefined);
    const reason = await this.open();
    if (typeof reason === "string" && !this.closed) this.scheduleRestart(reason);
  }

  /** A prompt's messages with these arguments (prompts/get). Throws when the server refuses or is down. */
  async getPrompt(name: string, args: Record<string, string>): Promise<GetPromptResult> {
    const timeout = this.config.timeoutMs ?? this.opts.callTimeoutMs;
    return this.liveSession().client.getPrompt({ name, arguments: args }, { timeout });
  }

  /** A resource's contents (resources/read). Throws when the server refuses or is down. */
  async readResource(uri: string, signal?: AbortSignal): Promise<ReadResourceResult> {
    const timeout = this.config.timeoutMs ?? this.opts.callTimeoutMs;
    return this.liveSession().client.readResource({ uri }, { timeout, ...(signal && { signal }) });
  }

  private liveSession(): Session {
    const session = this.session;
    if (this.state === "connected" && session && !session.down) return session;
    throw new Error(`the server "${this.name}" is not connected${this.error ? `: ${this.error}` : ""}`);
  }

  async call(tool: string, args: Record<string, unknown>, opts: ToolCallOptions): Promise<CallAnswer> {
    const timeoutMs = this.config.timeoutMs ?? this.opts.callTimeoutMs;
    if (this.state === "connecting" || this.state === "reconnecting")
      await this.settled(timeoutMs, opts.signal);
    if (opts.signal?.aborted)
      return { failure: describeCallFailure(opts.signal.reason, timeoutMs, true, this.config) };
    const session = this.session;
    if (this.state !== "connected" || !session || session.down) {
      const why = this.error ?? "it is not connected";
      return { failure: { kind: "connection", text: `The server "${this.name}" is unavailable: ${why}` } };
    }
    const answer = await callOnSession(session, this.config, tool, args, opts, timeoutMs);
    if ("result" in answer)
      this.outputChecks.note(
        this.tools.find((t) => t.name === tool),
        answer.result,
      );
    // Over HTTP a dead server, or a sign-in gone, shows only as a failed request: treat it as a lost connection.
    const kind = "failure" in answer ? answer.failure.kind : undefined;
    // A person's own connection lives on: per-user.ts asks them to sign in again, and its
    // requests then carry their new tokens.
    if (kind === "unauthorized" && this.opts.owner === undefined)
      this.connectionLost(session, "the server refused its credentials (HTTP 401)");
    if (kind === "connection" && this.config.transport === "http") {
      this.connectionLost(session, "a call to it lost the connection or the session");
    }
    // One server error fails its call alone; several in a row (a gateway whose backend is
    // down) mean the session is of no use: it is made anew, with back-off.
    const status = "failure" in answer ? answer.failure.status : undefined;
    if (status === undefined || status < 500) session.serverErrorsInARow = 0;
    else {
      const inARow = (session.serverErrorsInARow ?? 0) + 1;
      session.serverErrorsInARow = inARow;
      if (inARow >= SERVER_ERRORS_BEFORE_RECONNECT)
        this.connectionLost(session, `it answered HTTP ${status} to ${inARow} calls in a row`);
    }
    return answer;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.restartTimer);
    this.retryAt = undefined;
    await this.dropSession("the hub is shutting down");
    if (this.state !== "blocked") this.setState("failed", "the hub was closed");
  }

  private setState(state: ServerState, error: string | undefined): void {
    const changed = state !== this.state || error !== this.error;
    this.state = state;
    this.error = error;
    if (state === "connected" || state === "failed") for (const wake of this.settleWaiters) wake();
    if (changed) this.opts.onChange();
  }

  /** Until the server is connected or has failed, `ms` at most; a stopped turn stops waiting. */
  private settled(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        this.settleWaiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener("abort", done, { once: true });
      this.settleWaiters.add(done);
    });
  }

  /**
   * Connects a new session and lists its tools. Resolves with undefined when connected,
   * a failure reason, or null when a newer attempt or close() overtook this one.
   */
  private async open(): Promise<string | undefined | null> {
    const attempt = ++this.attempt;
    const stderr = new StderrTail(this.name);
    const auth = this.opts.oauth?.uses(this.name) ? this.opts.oauth : undefined;
    // Nobody signed in yet: fail without a request, so a waiting server costs its authorization server nothing.
    this.awaitingSignIn = false;
    this.signInRefused = false;
    if (auth && !(await auth.signedIn(this.name, this.opts.owner).catch(() => false))) {
      if (attempt !== this.attempt || this.closed) return null;
      this.awaitingSignIn = true;
      const reason = needsSignIn(this.name);
      if (reason !== this.error) log.warn({ server: this.name }, "mcp server waits for an OAuth sign-in");
      return reason;
    }
    const maxAnswerBytes = answerBytes(this.opts.maxAnswerMb);
    const transport = createTransport(this.config, (line) => stderr.add(line), {
      ...(auth && { auth: auth.connectionAuth(this.name, this.opts.owner) }),
      maxAnswerBytes,
      // Called only once requests go out, when `session` is set.
      onRefused: (challenge) => {
        session.challenge = challenge;
      },
    });
    const client = new Client(this.opts.clientInfo, {
      capabilities: { elicitation: ELICITATION_CAPABILITY },
    });
    const session: Session = {
      client,
      transport,
      startedAt: Date.now(),
      live: false,
      down: false,
      waiting: new Set(),
      askers: new Set(),
    };
    session.completions = answerElicitations(client, this.name, () => [...session.askers]);
    this.session = session;
    followToolList(client, () => void this.refresh(session));
    client.onclose = () => this.connectionLost(session, "the connection closed");
    client.onerror = watchTransportErrors(session, {
      server: this.name,
      maxAnswerBytes,
      onDead: (reason) => this.connectionLost(session, reason),
    });
    let tools: Tool[];
    const t = startDeadline(this.opts.connectTimeoutMs, this.slowStarts);
    try {
      tools = await withDeadline("start-up", t, async (signal) => {
        const connecting = client.connect(transport, { timeout: t, signal });
        session.child = childOf(transport);
        await connecting;
        watchExit(session.child, (how) => this.connectionLost(session, `the server process ${how}`));
        const listed = this.listed.servable(await listAllTools(client, t, signal));
        // Prompts are a convenience: a server that fails to list them still serves its tools.
        this.prompts = await listAllPrompts(client, t, signal).catch((err: unknown) => {
          if (signal.aborted) throw err;
          log.warn({ err, server: this.name }, "could not list the server's prompts");
          return [];
        });
        return listed;
      });
    } catch (err) {
      markLost(session, "start-up failed");
      void closeClient(client, session.child, true).catch(() => {});
      if (attempt !== this.attempt || this.closed) return null;
      this.signInRefused = auth !== undefined && isRefusedSignIn(err);
      const slow = err instanceof DeadlineError;
      this.slowStarts = slow ? this.slowStarts + 1 : 0;
      const reason = slow
        ? describeSlowStart(t, startDeadline(this.opts.connectTimeoutMs, this.slowStarts), stderr.summary())
        : describeStartFailure(err, this.config, stderr.summary(), session.challenge);
      // Said once: a server that stays down is tried again quietly.
      if (reason === this.error)
        log.debug({ server: this.name, reason }, "mcp server still failing to start");
      else log.warn({ server: this.name, reason }, "mcp server failed to start");
      return reason;
    }
    if (attempt !== this.attempt || this.closed || session.down || !client.transport) {
      const overtaken = attempt !== this.attempt || this.closed;
      markLost(session, "start-up abandoned");
      await closeClient(client, session.child).catch(() => {});
      return overtaken ? null : "the connection closed right after start-up";
    }
    this.tools = tools;
    session.live = true;
    this.everConnected = true;
    this.slowStarts = 0;
    this.retryAt = undefined;
    log.info({ server: this.name, tools: this.tools.length }, "mcp server connected");
    this.setState("connected", undefined);
    return undefined;
  }

  private async refresh(session: Session): Promise<void> {
    if (session !== this.session || session.down) return;
    const seq = ++this.refreshSeq;
    try {
      const tools = this.listed.servable(await listAllTools(session.client, this.opts.callTimeoutMs));
      if (seq !== this.refreshSeq || session !== this.session || session.down) return;
      this.tools = tools;
      log.info({ server: this.name, tools: tools.length }, "mcp tool list changed");
      this.opts.onChange();
    } catch (err) {
      log.warn({ err, server: this.name }, "could not refresh the tool list after list_changed");
    }
  }

  private async dropSession(reason: string): Promise<void> {
    const session = this.session;
    if (!session) return;
    markLost(session, reason);
    this.session = undefined;
    const { transport, client } = session;
    if (transport instanceof StreamableHTTPClientTransport) {
      await withDeadline("session end", 1_000, () => transport.terminateSession()).catch(() => {});
    }
    await closeClient(client, session.child).catch((err: unknown) =>
      log.debug({ err, server: this.name }, "close failed"),
    );
  }

  /** A live session died: end its calls now, then restart with back-off or open the circuit. */
  private connectionLost(session: Session, reason: string): void {
    if (!session.live || session.down || session !== this.session || this.closed) return;
    markLost(session, reason);
    void closeClient(session.client, session.child).catch(() => {});
    if (Date.now() - session.startedAt >= STABLE_MS) this.failures = 0;
    log.warn({ server: this.name, reason }, "mcp server connection lost");
    this.scheduleRestart(reason);
  }

  /**
   * The next attempt, ever slower (see backoff.ts). A server that was connected is
   * `reconnecting` (keeping its tools) for maxRestarts attempts, then `failed`; one that
   * never connected is `failed` from the first. Either is tried again until it connects,
   * is reconnected by hand, or the hub closes.
   */
  private scheduleRestart(reason: string): void {
    this.failures++;
    const delay = retryDelay(this.failures);
    const tried = this.failures - 1;
    if (!this.everConnected || this.awaitingSignIn) this.setState("failed", reason);
    else if (this.failures > this.opts.maxRestarts)
      this.setState("failed", `${reason}; ${tried} restart${tried === 1 ? "" : "s"} in a row failed`);
    else this.setState("reconnecting", `${reason}; restarting in ${seconds(delay)}`);
    this.retryAt = Date.now() + delay;
    this.restartTimer = setTimeout(() => void this.restart(), delay);
    this.restartTimer.unref();
  }

  private async restart(): Promise<void> {
    if (this.closed) return;
    this.retryAt = undefined;
    const reason = await this.open();
    if (typeof reason === "string" && !this.closed) this.scheduleRestart(reason);
  }
}
