import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { SwitchboardError } from "../core/errors.js";
import { networkReason, neverSent } from "../core/unreachable.js";
import { safeAddress } from "../core/url-credentials.js";
import { scrub } from "../log.js";
import { seconds } from "../signals.js";
import { megabytes, TOO_LARGE } from "./read-buffer.js";
import type { ServerConfig } from "./servers.js";

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

function networkCause(err: unknown): string {
  const named = networkReason(err);
  if (named) return named;
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : undefined;
  const code = cause && "code" in cause ? String(cause.code) : undefined;
  return code ?? cause?.message ?? messageOf(err);
}

/** A server that signs in with OAuth and has no valid sign-in: who can fix it, and how. */
export function needsSignIn(server: string): string {
  return (
    `needs a sign-in: nobody has signed in to it yet, or its sign-in expired or was revoked. ` +
    `An admin can sign in with \`switchboard mcp login ${server}\` in a terminal, or with the connect command in chat.`
  );
}

/** A start-up that ran out of its `ms`, given `next` at its next attempt. */
export function describeSlowStart(ms: number, next: number, stderrTail: string): string {
  const longer = next > ms ? ` It is given ${seconds(next)} at its next attempt.` : "";
  return scrub(
    `did not finish starting within ${seconds(ms)}.${longer}${stderrTail ? ` Its last output: ${stderrTail}` : ""}`,
  );
}

/**
 * A 401 whose WWW-Authenticate (`challenge`) is OAuth's, from a server mcp.json gives no
 * credentials at all: it wants a sign-in nobody set up, rather than a new token. Remote
 * servers (GitHub's, Linear, Notion) answer so, with RFC 9728's `resource_metadata`.
 */
function wantsOAuth(config: ServerConfig, challenge: string | undefined): boolean {
  if (config.transport !== "http" || config.oauth || challenge === undefined) return false;
  if (Object.keys(config.headers).some((h) => h.toLowerCase() === "authorization")) return false;
  return /^\s*Bearer\b|\bresource_metadata\s*=/i.test(challenge);
}

/**
 * Why a server did not come up, in words the person running the bot can act on.
 * `challenge`: the WWW-Authenticate of the 401 it answered, if it did.
 */
export function describeStartFailure(
  err: unknown,
  config: ServerConfig,
  stderrTail: string,
  challenge?: string,
): string {
  const tail = stderrTail ? ` Its last output: ${stderrTail}` : "";
  let reason: string;
  if (config.transport === "stdio") {
    const code = err instanceof Error && "code" in err ? String(err.code) : undefined;
    if (code === "ENOENT") {
      reason = `could not start "${config.command}": command not found (check the command and PATH).`;
    } else if (code === "EACCES") {
      reason = `could not start "${config.command}": permission denied.`;
    } else if (err instanceof McpError && err.code === ErrorCode.ConnectionClosed) {
      reason = `the process "${config.command}" exited during start-up.${tail}`;
    } else {
      reason = `start-up failed: ${messageOf(err)}.${tail}`;
    }
  } else if (isRefusedSignIn(err)) {
    reason = config.oauth
      ? needsSignIn(config.name)
      : wantsOAuth(config, challenge)
        ? `${safeAddress(config.url)} asks for an OAuth sign-in (HTTP 401), which mcp.json does not set up for it: add "oauth": true to its entry, then sign in with \`switchboard mcp login ${config.name}\`.`
        : `${safeAddress(config.url)} refused the bot's credentials (HTTP 401): an operator must update them in mcp.json`;
  } else if (err instanceof SwitchboardError) {
    reason = err.message;
  } else if (err instanceof StreamableHTTPError) {
    reason = `${safeAddress(config.url)} answered HTTP ${err.code ?? "error"}: ${err.message}`;
  } else if (err instanceof McpError) {
    reason = `${safeAddress(config.url)} refused the MCP handshake: ${err.message}`;
  } else {
    reason = `could not reach ${safeAddress(config.url)}: ${networkCause(err)}`;
  }
  return scrub(reason);
}

/** The server refused the credentials a request carried (401), and no refresh renewed them. */
export function isRefusedSignIn(err: unknown): boolean {
  return err instanceof UnauthorizedError || (err instanceof StreamableHTTPError && err.code === 401);
}

/** A 401 in words: whose credentials the server refused, and who can give it new ones. */
function refusedCredentials(config: ServerConfig, challenge: string | undefined): string {
  const oauth = config.transport === "http" ? config.oauth : undefined;
  if (oauth?.perUser) {
    return `The tool's server refused the person's own sign-in to ${config.name}: it expired or was revoked. They can sign in again with /switchboard connect ${config.name}, then ask again.`;
  }
  if (oauth) {
    return "The tool's server needs a new sign-in: the bot's sign-in expired or was revoked. Tell the person that an admin can sign in again with the connect command.";
  }
  if (wantsOAuth(config, challenge)) {
    return `The tool's server asks for an OAuth sign-in (HTTP 401), which mcp.json does not set up for it. Tell the person that an operator must add "oauth": true to the entry of ${config.name} in mcp.json, and sign in.`;
  }
  return "The tool's server refused the bot's credentials (HTTP 401). Tell the person that an operator must update them in mcp.json.";
}

/** `unauthorized`: the server refused the request's credentials (401); the request did not run. */
export type CallFailureKind = "timeout" | "cancelled" | "connection" | "unauthorized" | "server";

export interface CallFailure {
  kind: CallFailureKind;
  text: string;
  /** The HTTP status the server (or its gateway) answered, when it answered one. */
  status?: number;
}

/**
 * Said of a call that reached its server and got no answer: a repeated write could run twice.
 * (runtime/takeover-steps.ts MAY_HAVE_RUN says it of a call whose own process stopped.)
 */
export const OUTCOME_UNKNOWN =
  "The call may or may not have run; do not assume either, and check whether it took effect before calling it again.";

/** An answer over mcp.maxAnswerMb, dropped unread (see read-buffer.ts): the server lives on. */
export function answerTooLarge(limitBytes: number): CallFailure {
  return {
    kind: "server",
    text:
      `The tool's answer was larger than ${megabytes(limitBytes)}, the most the bot reads from a tool server, so it was dropped; the tool ran, and its server is still connected. ` +
      "Ask for less: a smaller file, fewer results, or one part at a time.",
  };
}

function tooLargeLimit(err: McpError): number | undefined {
  const data: unknown = err.data;
  if (typeof data !== "object" || data === null || !(TOO_LARGE in data)) return undefined;
  const limit = (data as Record<string, { limit?: unknown } | undefined>)[TOO_LARGE]?.limit;
  return typeof limit === "number" ? limit : undefined;
}

/** Why a call failed, told to the model so that it can decide what to do next. `challenge`: as for describeStartFailure. */
export function describeCallFailure(
  err: unknown,
  timeoutMs: number,
  aborted: boolean,
  config: ServerConfig,
  challenge?: string,
): CallFailure {
  if (aborted) return { kind: "cancelled", text: "The call was cancelled before the tool answered." };
  if (isRefusedSignIn(err)) return { kind: "unauthorized", text: refusedCredentials(config, challenge) };
  // The bot's own (a sign-in that could not be renewed): its sentence says what happened.
  if (err instanceof SwitchboardError) return { kind: "server", text: err.userMessage };
  if (err instanceof McpError) {
    const limit = tooLargeLimit(err);
    if (limit !== undefined) return answerTooLarge(limit);
    if (err.code === ErrorCode.RequestTimeout) {
      return {
        kind: "timeout",
        text: `The tool did not answer within ${seconds(timeoutMs)} (timeout). It may still be working; do not assume it did or did not run.`,
      };
    }
    if (err.code === ErrorCode.ConnectionClosed) {
      return {
        kind: "connection",
        text: `The connection to the tool's server closed before it answered. ${OUTCOME_UNKNOWN} The server is being restarted.`,
      };
    }
    return { kind: "server", text: `The server answered with an error: ${scrub(err.message)}` };
  }
  // An HTTP status is the server's (or its proxy's) answer to this one request: the
  // session lives on, and so do the other calls on it. Only 404 says the session is gone.
  if (err instanceof StreamableHTTPError && err.code !== undefined) {
    // The SDK's example servers, and the many copied from them, answer a session they do
    // not know (they restarted) with 400 rather than the spec's 404.
    if (err.code === 404 || (err.code === 400 && /session/i.test(messageOf(err)))) {
      return {
        kind: "connection",
        text: "The tool's server no longer knows this bot's session (it restarted), so the call did not run. It is being reconnected; try again in a moment.",
      };
    }
    return { kind: "server", text: httpRefusal(err.code, messageOf(err)), status: err.code };
  }
  if (err instanceof StreamableHTTPError || err instanceof TypeError) {
    const why = scrub(networkCause(err));
    if (neverSent(err)) {
      return {
        kind: "connection",
        text: `The tool's server could not be reached (${why}), so the call did not run. Try again in a moment.`,
      };
    }
    // Cut after the request went out (a reset, a response ended mid-body): it reached the server.
    return {
      kind: "connection",
      text: `The connection to the tool's server broke before it answered (${why}). ${OUTCOME_UNKNOWN}`,
    };
  }
  return { kind: "server", text: `The call failed: ${scrub(messageOf(err))}` };
}

function httpRefusal(status: number, message: string): string {
  if (status === 429) {
    return "The tool's server is limiting how often it may be called (HTTP 429). Wait a little before calling it again.";
  }
  if (status >= 500) {
    return `The tool's server failed to answer this call (HTTP ${status}). It may work if tried again in a moment.`;
  }
  const what = status > 0 ? `HTTP ${status}` : "an answer that is not MCP";
  return `The tool's server refused the call (${what}): ${scrub(message).slice(0, 300)}`;
}
