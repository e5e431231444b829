import type { Config, Secrets } from "../config.js";
import type { Artifact } from "../mcp/types.js";

/** "slack:T1:C1:1712345678.000100", "discord:G1:THREAD_ID", "console:local" */
export type ThreadKey = string;

export type Platform = "slack" | "discord" | "console";

export interface InboundFile {
  name: string;
  mimeType: string;
  size: number;
  /** Loads the bytes (platform download with auth, at most 30 s); may throw, also when `signal` aborts. */
  fetch(signal?: AbortSignal): Promise<Uint8Array>;
}

export interface PriorMessage {
  author: string;
  text: string;
  /** True when the bot wrote it. */
  fromBot: boolean;
}

export interface Inbound {
  /** Platform event id, for dedupe. */
  id: string;
  /** Further ids of the same message (e.g. Slack `channel:ts`) that must also dedupe. */
  aliases?: string[];
  key: ThreadKey;
  platform: Platform;
  channel: string;
  user: { id: string; name?: string };
  text: string;
  attachments: InboundFile[];
  /** Earlier messages of the thread, when the bot joins an existing thread mid-way. */
  history?: () => Promise<PriorMessage[]>;
  reply: Reply;
}

/** Receives the answer text as it is written; the renderer paces the platform writes. */
export interface TextSink {
  write(delta: string): void;
  /** Delivers the complete final text; resolves when it is on the platform. */
  finish(): Promise<void>;
  /** Ends the reply with a sentence saying what went wrong (never a dangling placeholder). */
  fail(message: string): Promise<void>;
}

/** One per turn, made by the adapter: knows how to write back to that place. */
export interface Reply {
  /** Shown while the agent works ("Calling everything__echo…"); cleared by the answer. */
  status(text: string): Promise<void>;
  stream(): TextSink;
  upload(a: Artifact): Promise<void>;
  title(t: string): Promise<void>;
  /** Informational answers (commands); ephemeral where the platform allows it. */
  notice(text: string): Promise<void>;
}

export interface Adapter {
  readonly platform: Platform;
  start(): Promise<void>;
  /** Stops taking new events; turns in flight continue. */
  stop(): Promise<void>;
  /** True while connected to the platform (for /readyz). */
  ready(): boolean;
  /**
   * Ends a reply that a crash left half-written: posts `note` in the thread named by `key`
   * (called once per such thread at start-up). Optional; without it the note is skipped.
   */
  recover?(key: ThreadKey, note: string): Promise<void>;
}

export const COMMAND_NAMES = ["new", "compact", "summary", "title", "tools", "model", "help"] as const;

export type CommandName = (typeof COMMAND_NAMES)[number];

export interface Command {
  name: CommandName;
  key: ThreadKey;
  platform: Platform;
  user: { id: string; name?: string };
  /** Text after the subcommand (e.g. the model name for `model`). */
  arg?: string;
}

/**
 * What an adapter calls into: the dispatcher. It dedupes, queues per thread, runs the
 * agent and drives the `Reply` with the agent's events. Never throws.
 */
export interface TurnRunner {
  handle(inbound: Inbound): Promise<void>;
  /** Runs a command and returns the text to show (ephemeral where possible). */
  command(cmd: Command): Promise<string>;
  /** True when Switchboard has a session for this thread (to follow threads without a mention). */
  knows(key: ThreadKey): Promise<boolean>;
  /** Marks an event id as seen; false if it was already seen (for events handled outside `handle`). */
  firstSight(id: string): Promise<boolean>;
}

/** What every platform adapter is built from (see src/app.ts). */
export interface AdapterDeps {
  runner: TurnRunner;
  config: Config;
  secrets: Secrets;
  /** Model ids a user may pick with `/model` (for autocomplete and validation). */
  models: () => string[];
  /** Counts a failed platform API call (for /metrics); adapters call it on errors and 429s. */
  platformError?: (rateLimited: boolean) => void;
}
