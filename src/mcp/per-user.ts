import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { SwitchboardError } from "../core/errors.js";
import { randomRef } from "../core/random-ref.js";
import { log } from "../log.js";
import { type CallAnswer, type ConnectionOptions, ServerConnection } from "./connection.js";
import type { ServerAuth } from "./oauth/sign-ins.js";
import type { HttpServerConfig } from "./servers.js";
import type { ServerStatus, ToolCallOptions } from "./types.js";

/** A person's connection closes after this long unused; their next call opens it again. */
const IDLE_MS = 15 * 60_000;
const SWEEP_MS = 60_000;
/** How often a waiting sign-in looks for the person's tokens (the browser may come back to another replica). */
const SIGN_IN_POLL_MS = 500;

/** How long a person's connection may stay unused, and how often that is looked at (shorter in tests). */
export interface IdleTimes {
  idleMs: number;
  sweepMs: number;
}

/** A person's open connection; `calls` are those running on it now, a form they opened included. */
interface Kept {
  connection: ServerConnection;
  usedAt: number;
  calls: number;
}

/** The one tool a per-user server offers before anyone has signed in to it: its real list is unknown until then. */
export const SIGN_IN_TOOL = "sign_in";

function signInTool(server: string): Tool {
  return {
    name: SIGN_IN_TOOL,
    description:
      `Signs the person in to ${server} with their own account. Its other tools are listed once ` +
      `someone has signed in; call this when the person asks for something ${server} does.`,
    inputSchema: { type: "object", properties: {} },
    // Runs without an approval: it changes nothing, and only the person themselves can sign in.
    annotations: { readOnlyHint: true, openWorldHint: false },
  };
}

/**
 * A streamable-HTTP server where each person signs in with their own account (`"oauth":
 * {"perUser": true}`): one connection per person, opened at their first call with their
 * token and closed when unused. A person with no sign-in is asked in the thread, and sees
 * the link alone; the call waits for the sign-in. The tool list is the last one any
 * person's connection listed, kept in the store so that every replica offers it at once.
 */
export class PerUserServer {
  tools: Tool[] = [];
  private readonly open = new Map<string, Kept>();
  /** One opening (and sign-in) per person at a time: ten calls at once ask them once. */
  private readonly opening = new Map<string, Promise<ServerConnection | string>>();
  /** One sign-in question per person at a time, for calls their connection's server refused at once. */
  private readonly asking = new Map<string, Promise<true | string>>();
  private readonly sweeper: NodeJS.Timeout;
  /** Made once: the hub keeps one provider copy of its schema per schema object. */
  private readonly signInEntry: Tool;

  constructor(
    readonly config: HttpServerConfig,
    private readonly opts: ConnectionOptions & { oauth: ServerAuth },
    private readonly blocked: boolean,
    private readonly idle: IdleTimes = { idleMs: IDLE_MS, sweepMs: SWEEP_MS },
  ) {
    this.signInEntry = signInTool(config.name);
    this.sweeper = setInterval(() => void this.sweep(), idle.sweepMs);
    this.sweeper.unref();
  }

  get name(): string {
    return this.config.name;
  }

  async start(): Promise<void> {
    if (this.blocked) return;
    this.tools = (await this.opts.oauth.rememberedTools(this.name).catch(() => undefined)) ?? [];
  }

  /** What the model may call: the known tools, or the sign-in tool while none are known. */
  catalog(): Tool[] {
    if (this.blocked) return [];
    return this.tools.length > 0 ? this.tools : [this.signInEntry];
  }

  status(): ServerStatus {
    if (this.blocked) {
      return {
        name: this.name,
        state: "blocked",
        transport: "http",
        toolCount: 0,
        error: "blocked by the configuration (mcp.blockedServers)",
      };
    }
    const open = [...this.open.values()].filter((o) => o.connection.state === "connected").length;
    return {
      name: this.name,
      state: "connected",
      transport: "http",
      toolCount: this.tools.length,
      perUser: { open },
      ...(this.config.warnings && { warnings: this.config.warnings }),
    };
  }

  /** The person's own connection, after signing them in if they have no sign-in; else a sentence for the model. */
  connectionFor(opts: ToolCallOptions): Promise<ServerConnection | string> {
    const owner = opts.owner;
    if (this.blocked) return Promise.resolve(`The server "${this.name}" is blocked by the configuration.`);
    if (!owner) {
      return Promise.resolve(
        `${this.name} works with each person's own sign-in, and this call has nobody to sign in.`,
      );
    }
    const kept = this.open.get(owner);
    if (kept?.connection.state === "connected") {
      kept.usedAt = Date.now();
      return Promise.resolve(kept.connection);
    }
    let opening = this.opening.get(owner);
    if (!opening) {
      opening = this.openFor(owner, opts).finally(() => this.opening.delete(owner));
      this.opening.set(owner, opening);
    }
    return opening;
  }

  /**
   * A call on the person's own connection. A sign-in the server refuses (expired or revoked,
   * with no refresh token to renew it) stays in the store, as the SDK leaves it: it is
   * forgotten here, the person is asked to sign in again, and the call, which the server
   * refused before running it, is made once more. The connection stays: its requests read
   * the new tokens, and the other calls on it are not cut short.
   */
  async callOn(
    own: ServerConnection,
    tool: string,
    args: Record<string, unknown>,
    opts: ToolCallOptions,
  ): Promise<{ connection: ServerConnection; answer: CallAnswer } | string> {
    const since = Date.now();
    const answer = await this.inUse(opts.owner, own, () => own.call(tool, args, opts));
    if (!("failure" in answer) || answer.failure.kind !== "unauthorized" || !opts.owner)
      return { connection: own, answer };
    const owner = opts.owner;
    log.info({ server: this.name }, "a per-user server refused a person's sign-in; they are asked again");
    await this.opts.oauth.forget(this.name, owner, since).catch(() => undefined);
    // Another call refused at the same time may have had them sign in again already.
    if (!(await this.opts.oauth.signedIn(this.name, owner).catch(() => false))) {
      const signed = await this.askOnce(owner, opts);
      if (signed !== true) return signed;
    }
    const again = await this.connectionFor(opts);
    if (typeof again === "string") return again;
    return { connection: again, answer: await this.inUse(owner, again, () => again.call(tool, args, opts)) };
  }

  /**
   * A call on the person's kept connection: the sweep leaves it open while the call runs
   * (a form may wait 10 minutes, a long job report progress for longer), and its end counts
   * as use, so the idle time starts when the person's last call ended, not when it began.
   */
  private async inUse<T>(
    owner: string | undefined,
    connection: ServerConnection,
    run: () => Promise<T>,
  ): Promise<T> {
    const kept = owner === undefined ? undefined : this.open.get(owner);
    const mine = kept?.connection === connection ? kept : undefined;
    if (mine) mine.calls++;
    try {
      return await run();
    } finally {
      if (mine) {
        mine.calls--;
        mine.usedAt = Date.now();
      }
    }
  }

  /** What the sign-in tool answers once the person is signed in. */
  signedInText(connection: ServerConnection): string {
    const names = connection.tools.map((t) => t.name);
    return `The person is signed in to ${this.name}. Its tools (${names.join(", ") || "none"}) are offered from their next message on.`;
  }

  /** The person signed out: their connection closes now. */
  async signedOut(owner: string): Promise<void> {
    const kept = this.open.get(owner);
    this.open.delete(owner);
    await kept?.connection.close();
  }

  /** Reads the kept tool list again; every person's connection opens afresh at their next call. */
  async reconnect(): Promise<ServerStatus> {
    const all = [...this.open.values()];
    this.open.clear();
    await Promise.all(all.map((o) => o.connection.close()));
    await this.start();
    this.opts.onChange();
    return this.status();
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const all = [...this.open.values()];
    this.open.clear();
    await Promise.all(all.map((o) => o.connection.close()));
  }

  private async openFor(owner: string, opts: ToolCallOptions): Promise<ServerConnection | string> {
    const stale = this.open.get(owner);
    this.open.delete(owner);
    await stale?.connection.close();
    const auth = this.opts.oauth;
    for (let attempt = 0; attempt < 2; attempt++) {
      if (!(await auth.signedIn(this.name, owner).catch(() => false))) {
        const signed = await this.askOnce(owner, opts);
        if (signed !== true) return signed;
      }
      const since = Date.now();
      const connection: ServerConnection = new ServerConnection(
        this.config,
        { ...this.opts, owner, onChange: () => this.changed(connection) },
        false,
      );
      await connection.start();
      if (connection.state === "connected") {
        this.open.set(owner, { connection, usedAt: Date.now(), calls: 0 });
        this.changed(connection);
        return connection;
      }
      const why = connection.error ?? "it did not connect";
      await connection.close();
      if (!connection.needsSignIn) return `The server "${this.name}" is unavailable: ${why}`;
      // Refused (expired or revoked, and not renewed): the person signs in again.
      await auth.forget(this.name, owner, since).catch(() => undefined);
    }
    return `${this.name} did not accept the person's sign-in. They can try again with /switchboard connect ${this.name}.`;
  }

  /** Asks the person to sign in (a link only they see) and waits until they have, or the question ends. */
  private async signIn(owner: string, opts: ToolCallOptions): Promise<true | string> {
    const later = `They can sign in with /switchboard connect ${this.name}, then ask again.`;
    if (!opts.elicit)
      return `${this.name} needs the person's own sign-in, and they cannot be asked here. ${later}`;
    let url: URL;
    try {
      url = await this.opts.oauth.begin(this.name, owner);
    } catch (err) {
      return err instanceof SwitchboardError
        ? err.userMessage
        : `The sign-in to ${this.name} could not start.`;
    }
    const since = Date.now();
    const stop = new AbortController();
    const signal = opts.signal ?? new AbortController().signal;
    try {
      const answer = await opts.elicit(
        {
          mode: "url",
          server: this.name,
          message: `${this.name} works with each person's own account: sign in to it, and I go on.`,
          url: url.href,
          elicitationId: randomRef(),
          completed: this.signedInAfter(owner, since, stop.signal),
          mustComplete: true,
          private: true,
        },
        signal,
      );
      if (await this.opts.oauth.signedInSince(this.name, since, owner).catch(() => false)) return true;
      log.info({ server: this.name, action: answer.action }, "a person did not sign in to a per-user server");
      return answer.action === "decline"
        ? `The person declined to sign in to ${this.name}, so its tool did not run.`
        : `The person did not sign in to ${this.name}, so its tool did not run. ${later}`;
    } finally {
      stop.abort();
    }
  }

  /** Resolves once the person's tokens are in the store (their sign-in finished here or on another replica). */
  private signedInAfter(owner: string, since: number, stop: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const poll = setInterval(() => {
        void this.opts.oauth.signedInSince(this.name, since, owner).then(
          (yes) => {
            if (!yes || stop.aborted) return;
            clearInterval(poll);
            resolve();
          },
          () => undefined,
        );
      }, SIGN_IN_POLL_MS);
      stop.addEventListener("abort", () => clearInterval(poll), { once: true });
    });
  }

  private askOnce(owner: string, opts: ToolCallOptions): Promise<true | string> {
    let asking = this.asking.get(owner);
    if (!asking) {
      asking = this.signIn(owner, opts).finally(() => this.asking.delete(owner));
      this.asking.set(owner, asking);
    }
    return asking;
  }

  /** A person's connection came up or its list changed: that list is the server's, here and in the store. */
  private changed(connection: ServerConnection): void {
    if (connection.state !== "connected") return;
    const names = (tools: Tool[]) => tools.map((t) => `${t.name}\n${t.description ?? ""}`).join("\n");
    if (names(connection.tools) === names(this.tools)) return;
    this.tools = connection.tools;
    void this.opts.oauth
      .rememberTools(this.name, connection.tools)
      .catch((err: unknown) => log.warn({ err, server: this.name }, "could not keep a server's tool list"));
    this.opts.onChange();
  }

  private async sweep(): Promise<void> {
    const now = Date.now();
    for (const [owner, kept] of this.open) {
      if (kept.calls > 0) continue;
      if (now - kept.usedAt < this.idle.idleMs && kept.connection.state === "connected") continue;
      this.open.delete(owner);
      await kept.connection.close().catch(() => undefined);
    }
  }
}
