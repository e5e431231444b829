import type { ChildProcess } from "node:child_process";
import { EventEmitter, once } from "node:events";
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, type StdioServerParameters } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { type Prompt, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import type { ConnectionAuth } from "./oauth/sign-ins.js";
import { answerBytes, BoundedReadBuffer } from "./read-buffer.js";
import type { ServerConfig, StdioServerConfig } from "./servers.js";
import { stderrLines } from "./stderr-tail.js";

export type McpTransport = StdioClientTransport | StreamableHTTPClientTransport;

const MAX_PAGES = 100;
/** A burst of tools/list_changed is let settle this long, so that the list is read once for it. */
const LIST_CHANGED_SETTLE_MS = 50;

export interface TransportOptions {
  /** The sign-in of a server that uses OAuth. */
  auth?: ConnectionAuth;
  /** The most read of one stdio message (see BoundedReadBuffer). */
  maxAnswerBytes?: number;
  /** An HTTP server without `auth` answered 401 with this WWW-Authenticate (or none: undefined). */
  onRefused?: (challenge: string | undefined) => void;
}

/** A stdio server's stderr arrives here line by line; it never reaches our stdout. */
export function createTransport(
  config: ServerConfig,
  onStderrLine: (line: string) => void,
  { auth, maxAnswerBytes = answerBytes(undefined), onRefused }: TransportOptions = {},
): McpTransport {
  if (config.transport === "http") {
    // Without an auth provider the SDK throws a bare 401, its headers gone: they are read here.
    const fetch = auth?.fetch ?? (onRefused && noticingRefusals(onRefused));
    return new StreamableHTTPClientTransport(new URL(config.url), {
      requestInit: { headers: config.headers },
      ...(auth && { authProvider: auth.authProvider }),
      ...(fetch && { fetch }),
    });
  }
  const spawned = inOwnSession(config);
  // The SDK passes only a safe subset of our environment (PATH, HOME…) plus `env`: our keys stay ours.
  const transport = new (spawned.command === SETSID ? GroupLeaderTransport : BoundedStdioTransport)({
    ...spawned,
    env: config.env,
    ...(config.cwd !== undefined && { cwd: config.cwd }),
    stderr: "pipe",
    maxBufferSize: maxAnswerBytes,
  });
  transport.stderr?.on("data", stderrLines(onStderrLine));
  return transport;
}

function noticingRefusals(onRefused: (challenge: string | undefined) => void): FetchLike {
  return async (url, init) => {
    const response = await fetch(url, init);
    if (response.status === 401) onRefused(response.headers.get("www-authenticate") ?? undefined);
    return response;
  };
}

/** util-linux's `setsid`: on Linux, and absent on macOS (where servers share our process group). */
const SETSID = ["/usr/bin/setsid", "/bin/setsid"].find((path) => isExecutable(path));

/** Servers that lead a process group of their own (see inOwnSession), until closeClient ends them. */
const groupLeaders = new Set<ChildProcess>();

/**
 * Our own session keeps a Ctrl+C from the servers, so nothing else ends them when we exit
 * without closing them (a second Ctrl+C, a fatal error): an SDK server ignores the end of
 * its stdin and would run on for ever. So their groups are killed as we exit, at once:
 * an "exit" listener cannot wait for anything. A signal whose default action ends the
 * process (SIGHUP, SIGKILL) emits no "exit": main.ts stops on SIGHUP as on SIGTERM.
 */
function killGroupsAtExit(): void {
  for (const child of groupLeaders) killServer(child);
}

/**
 * The SDK's stdio transport with our read buffer in place of its own (kept private, so
 * set here): an answer over the limit fails its call alone. Should a later SDK rename the
 * field, its own buffer stays, with the same limit passed as maxBufferSize.
 */
class BoundedStdioTransport extends StdioClientTransport {
  constructor(params: StdioServerParameters) {
    super(params);
    const self = this as unknown as { _readBuffer?: unknown };
    if (self._readBuffer !== undefined && params.maxBufferSize !== undefined)
      self._readBuffer = new BoundedReadBuffer(params.maxBufferSize);
  }
}

/** A stdio transport whose server leads its own group: it is known as soon as it is spawned. */
class GroupLeaderTransport extends BoundedStdioTransport {
  override start(): Promise<void> {
    // The SDK spawns synchronously, inside start's promise.
    const started = super.start();
    const child = childOf(this);
    if (child) {
      if (!process.listeners("exit").includes(killGroupsAtExit)) process.on("exit", killGroupsAtExit);
      groupLeaders.add(child);
      // What its wrapper left goes with it, and the group is forgotten: its id, free again,
      // may later be another process's, which our exit must not kill.
      child.once("exit", () => {
        killServer(child);
        groupLeaders.delete(child);
      });
    }
    return started;
  }
}

/**
 * SIGKILL to the server, and to its whole group when it leads one: what a wrapper started
 * (`sh -c`, `npx`) dies with it, even after the wrapper itself is gone. A group that is
 * gone already (ESRCH) is no error.
 */
function killServer(child: ChildProcess): void {
  if (groupLeaders.has(child) && child.pid !== undefined) {
    try {
      process.kill(-child.pid, "SIGKILL");
      return;
    } catch {
      // No such group (yet): setsid may not have run; the pid alone is signalled.
    }
  }
  if (running(child)) child.kill("SIGKILL");
}

/**
 * A stdio server started in a session (and process group) of its own: Ctrl+C in the
 * terminal signals the whole foreground group, and the servers must outlive it so that a
 * graceful stop can finish the tool calls in flight; we end them ourselves on close.
 * `setsid` execs the server in place (the pid the SDK signals is the server's). A command
 * that cannot be found is spawned as given, so that it fails as "command not found".
 */
export function inOwnSession(config: Pick<StdioServerConfig, "command" | "args" | "env" | "cwd">): {
  command: string;
  args: string[];
} {
  const found = SETSID && resolveCommand(config.command, config.env?.PATH ?? process.env.PATH, config.cwd);
  return found
    ? { command: SETSID, args: [found, ...config.args] }
    : { command: config.command, args: config.args };
}

/** The executable `command` names, as execvp would find it; undefined when there is none. */
function resolveCommand(
  command: string,
  path: string | undefined,
  cwd: string | undefined,
): string | undefined {
  if (command.includes("/")) {
    const full = resolve(cwd ?? process.cwd(), command);
    return isExecutable(full) ? full : undefined;
  }
  for (const dir of (path ?? "").split(delimiter)) {
    if (!dir) continue;
    const full = join(dir, command);
    if (isExecutable(full)) return full;
  }
  return undefined;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

/**
 * Reports the death of a stdio server's process. The SDK only watches the child's
 * `close`, which waits for every stdio handle: a grandchild that holds stdout open (as
 * under `npx`) would hide the death until each call timed out.
 */
export function watchExit(child: ChildProcess | undefined, onExit: (how: string) => void): void {
  if (!child || !running(child)) return;
  child.once("exit", (code, signal) => {
    onExit(signal ? `was killed by ${signal}` : `exited with code ${code}`);
  });
}

/** The spawned process; the SDK keeps it private and forgets it on close, so read it right after start. */
export function childOf(transport: McpTransport): ChildProcess | undefined {
  if (!(transport instanceof StdioClientTransport)) return undefined;
  const child = (transport as unknown as { _process?: unknown })._process;
  return child instanceof EventEmitter ? (child as ChildProcess) : undefined;
}

/**
 * Closes the client and makes sure a stdio child is gone. The SDK ends stdin and then
 * waits on unref'd timers before it signals, so a server that ignores stdin could
 * outlive us; `now` skips the courtesy for a server that is broken anyway.
 */
export async function closeClient(
  client: Client,
  child: ChildProcess | undefined,
  now = false,
): Promise<void> {
  if (child && now) killServer(child);
  await client.close();
  if (!child) return;
  try {
    if (!running(child)) return;
    // Whichever wait loses is cancelled, so no timer outlives the child and holds up our exit.
    const settled = new AbortController();
    const gone = once(child, "exit", { signal: settled.signal });
    killServer(child);
    await Promise.race([gone, sleep(2_000, undefined, { signal: settled.signal })]).finally(() =>
      settled.abort(),
    );
  } finally {
    // The server may have left on its own and a child of its wrapper stayed.
    killServer(child);
    groupLeaders.delete(child);
  }
}

export function pidOf(transport: McpTransport | undefined): number | undefined {
  return transport instanceof StdioClientTransport ? (transport.pid ?? undefined) : undefined;
}

/** Every page of a paginated MCP list, following `nextCursor`; a server that repeats a cursor is not followed round. */
export async function listAll<T>(
  page: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string }>,
): Promise<T[]> {
  const items: T[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let n = 0; n < MAX_PAGES; n++) {
    const res = await page(cursor);
    items.push(...res.items);
    cursor = res.nextCursor;
    if (cursor === undefined || seen.has(cursor)) break;
    seen.add(cursor);
  }
  return items;
}

const cursorParams = (cursor: string | undefined) => (cursor === undefined ? undefined : { cursor });

/** Every page of `prompts/list`; none when the server offers no prompts. */
export async function listAllPrompts(
  client: Client,
  timeout: number,
  signal?: AbortSignal,
): Promise<Prompt[]> {
  if (!client.getServerCapabilities()?.prompts) return [];
  return listAll(async (cursor) => {
    const res = await client.listPrompts(cursorParams(cursor), { timeout, signal });
    return { items: res.prompts, nextCursor: res.nextCursor };
  });
}

/**
 * Calls `onChanged` once per burst of tools/list_changed. The SDK installs its own handler
 * (the Client's `listChanged` option) only for a server that declares `tools.listChanged`;
 * servers that send the notification without declaring it (FastMCP's default) would keep
 * their first list for ever.
 */
export function followToolList(client: Client, onChanged: () => void): void {
  let settling: NodeJS.Timeout | undefined;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    clearTimeout(settling);
    settling = setTimeout(onChanged, LIST_CHANGED_SETTLE_MS);
    settling.unref();
  });
}
