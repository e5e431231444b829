import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { log } from "../log.js";
import { answerTooLarge } from "./failures.js";
import { TooLargeMessageError } from "./read-buffer.js";
import { endWaiting, type Session } from "./session.js";

/** How long a server whose stream broke has to answer a ping before it is taken for dead. */
const PROBE_MS = 3_000;
/**
 * After a ping that failed, the calls in flight are let fail on their own this long first:
 * a call sent as the server died learns that it never reached it (and did not run), which
 * says more than that the server stopped.
 */
const OWN_FAILURE_MS = 300;

/**
 * What the SDK's streamable HTTP transport reports of a response stream that broke (the
 * server died, a proxy cut it) and of its attempts to resume it. It only reports them:
 * the calls answered on that stream wait on until their timeout, and the session looks
 * live, until the next request fails.
 */
const BROKEN_STREAM = /^(SSE stream disconnected|Failed to reconnect|Maximum reconnection attempts)/;

export interface TransportErrorsOptions {
  server: string;
  maxAnswerBytes: number;
  /** The session is of no more use: its calls end and it is made anew. */
  onDead: (reason: string) => void;
}

/**
 * A session's transport errors, which the SDK hands to `onerror` and otherwise ignores:
 * a stdio message too large to read, and an HTTP stream that broke, after which a ping
 * tells a server that is gone (whose calls then end at once) from a stream that was cut.
 */
export function watchTransportErrors(session: Session, opts: TransportErrorsOptions): (err: Error) => void {
  let probing = false;
  const probe = () => {
    if (probing || !session.live || session.down) return;
    probing = true;
    session.client
      .ping({ timeout: PROBE_MS })
      .then(
        () => {},
        (err: unknown) => {
          if (!unanswered(err)) return;
          const dead = () => opts.onDead("its connection broke during a call and it did not answer a ping");
          setTimeout(dead, OWN_FAILURE_MS).unref();
        },
      )
      .finally(() => {
        probing = false;
      });
  };
  return (err) => {
    if (err instanceof TooLargeMessageError) {
      log.warn({ server: opts.server, bytes: err.bytes }, "dropped a message over mcp.maxAnswerMb");
      // An answer, and no telling which call it was for: rather than leave each to its timeout, all end.
      if (err.response) endWaiting(session, answerTooLarge(opts.maxAnswerBytes));
      return;
    }
    log.debug({ err, server: opts.server }, "mcp transport error");
    if (BROKEN_STREAM.test(err.message) && session.waiting.size > 0) probe();
  };
}

/** A ping that got no answer: the request did not reach a server, or the server never replied. */
function unanswered(err: unknown): boolean {
  if (err instanceof McpError)
    return err.code === ErrorCode.RequestTimeout || err.code === ErrorCode.ConnectionClosed;
  // 404: the server no longer knows the session (it restarted).
  if (err instanceof StreamableHTTPError) return err.code === undefined || err.code === 404;
  // A network error (fetch's TypeError, or the bot's own fetch's).
  return true;
}
