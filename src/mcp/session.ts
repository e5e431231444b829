import type { ChildProcess } from "node:child_process";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Asker, Completions } from "./elicitation.js";
import type { CallFailure } from "./failures.js";
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
  /**
   * Calls in flight, ended at once: told why the connection was lost, or told their failure
   * when the session lives on (an answer too large to tell which call it was for).
   */
  waiting: Set<(why: string | CallFailure) => void>;
  /** Calls in flight that can ask their person, for the server's elicitation requests. */
  askers: Set<Asker>;
  completions?: Completions;
  /** The WWW-Authenticate of the server's last 401, when the bot signs in to it with no OAuth. */
  challenge?: string | undefined;
  /** Calls answered by an HTTP server error (5xx) since the last that succeeded. */
  serverErrorsInARow?: number;
}

export function markLost(session: Session, reason: string): void {
  session.down = true;
  endWaiting(session, reason);
}

export function endWaiting(session: Session, why: string | CallFailure): void {
  for (const wake of session.waiting) wake(why);
  session.waiting.clear();
}
