/** What the MCP hub offers the agent. The agent depends on these types, never on the SDK. */

import type { Artifact } from "../core/artifacts.js";
import type { FormField } from "../core/forms.js";

export interface ToolEntry {
  /** Provider-safe name sent to the model: `server__tool`, `^[a-zA-Z0-9_-]{1,64}$`. */
  name: string;
  server: string;
  /** The tool's own MCP name, exactly as the server spells it. */
  tool: string;
  description: string;
  /** JSON Schema with `$ref`s resolved, acceptable to both OpenAI and Anthropic. */
  inputSchema: Record<string, unknown>;
  /** What the server says the tool does (MCP tool annotations): hints, never guarantees. */
  annotations?: ToolHints;
}

export interface ToolHints {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

export interface ToolOutcome {
  ok: boolean;
  /** What the model reads: text, capped, with notes about attachments and truncation. */
  text: string;
  artifacts: Artifact[];
  ms: number;
  server: string;
  tool: string;
}

export type ServerState = "connecting" | "connected" | "reconnecting" | "failed" | "blocked";

export interface ServerStatus {
  name: string;
  state: ServerState;
  transport: "stdio" | "http";
  toolCount: number;
  /** Why it failed, in words a user can act on; absent when connected. */
  error?: string;
  /** Not connected, and tried again by itself in this many ms (a failed start, a death). */
  retryInMs?: number;
  pid?: number;
  /** A per-user server: how many people's own connections are open in this process. */
  perUser?: { open: number };
  /** What in mcp.json does nothing for this server (a misspelt key, a filter naming no tool), as sentences. */
  warnings?: string[];
}

export interface ToolProgress {
  progress: number;
  total?: number;
  message?: string;
}

export interface ToolCallOptions {
  signal?: AbortSignal;
  onProgress?: (p: ToolProgress) => void;
  /** Asks the person for what the server requests while the call runs (MCP elicitation). */
  elicit?: Elicit;
  /** The conversation the call belongs to (its thread key): a server's question goes only to it. */
  conversation?: string;
  /** The person whose turn it is (`platform:user`): per-user servers answer them with their own sign-in. */
  owner?: string;
}

/** A server asks the person something while a tool call runs: a form to fill in or a page to open. */
export type ElicitationRequest =
  | { mode: "form"; server: string; message: string; fields: FormField[] }
  | {
      mode: "url";
      server: string;
      message: string;
      url: string;
      elicitationId: string;
      /** Resolves when the server says the flow on that page is finished. */
      completed: Promise<void>;
      /** The call fails until the flow is finished (the server's -32042 error): only its end accepts. */
      mustComplete?: boolean;
      /** The link signs the asker in as themselves: shown to them alone, never in the thread. */
      private?: boolean;
    };

export type ElicitationAnswer =
  | { action: "accept"; content?: Record<string, string | number | boolean | string[]> }
  | { action: "decline" }
  | { action: "cancel" };

/** Never throws: a question that cannot be asked is answered `cancel`. */
export type Elicit = (request: ElicitationRequest, signal: AbortSignal) => Promise<ElicitationAnswer>;

/** A prompt a server offers (MCP prompts), run from chat as `/prompt`. */
export interface PromptEntry {
  server: string;
  name: string;
  description: string;
  arguments: Array<{ name: string; description?: string; required: boolean }>;
}

/** The hub as the agent sees it; `src/mcp/hub.ts` implements it. */
export interface ToolHub {
  tools(servers?: readonly string[]): ToolEntry[];
  /** The connected servers' prompts. */
  prompts?(): PromptEntry[];
  /** The text of a prompt with these arguments, as the person's message. Throws a SwitchboardError with a sentence. */
  getPrompt?(server: string, name: string, args: Record<string, string>): Promise<string>;
  status(): ServerStatus[];
  /** A person signed out of a per-user server: their connection to it closes. */
  signedOut?(server: string, owner: string): Promise<void>;
  /** Tries a server again now; undefined for a name that is not configured. */
  reconnect?(name: string): Promise<ServerStatus | undefined>;
  /** Never throws: every failure is an outcome with `ok: false` the model can read. */
  call(name: string, args: Record<string, unknown>, opts?: ToolCallOptions): Promise<ToolOutcome>;
  close(): Promise<void>;
}
