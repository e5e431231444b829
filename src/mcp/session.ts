import type { ChildProcess } from "node:child_process";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Asker, Completions } from "./elicitation.js";
import type { McpTransport } from "./transport.js";

/** One client and transport; a restart makes a new one so that late events of the old are ignored. */
export interface Session {
  client: Client;
  transport: McpTransport;
  child?: ChildProcess;
  startedAt: number;
  /** Set once start-up succeeded: until then a close is a start-up failure, not a death to restart from. */
  live: boolean;
  down: boolean;
  /** Calls in flight, told the reason when the connection is lost so that they end at once. */
  waiting: Set<(reason: string) => void>;
  /** Calls in flight that can ask their person, for the server's elicitation requests. */
  askers: Set<Asker>;
  completions?: Completions;
  /** Calls answered by an HTTP server error (5xx) since the last that succeeded. */
  serverErrorsInARow?: number;
}

export function markLost(session: Session, reason: string): void {
  session.down = true;
  for (const wake of session.waiting) wake(reason);
  session.waiting.clear();
}
