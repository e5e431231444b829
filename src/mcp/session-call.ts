import { type CallToolResult, CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { log } from "../log.js";
import { CallDeadline } from "./call-deadline.js";
import type { Asker } from "./elicitation.js";
import { withUrlPrerequisites } from "./elicitation.js";
import { type CallFailure, describeCallFailure, OUTCOME_UNKNOWN } from "./failures.js";
import type { ServerConfig } from "./servers.js";
import type { Session } from "./session.js";
import type { Elicit, ToolCallOptions } from "./types.js";

/** What a tool call gave: the server's result, or why there is none. */
export type CallAnswer = { result: CallToolResult } | { failure: CallFailure };

/** Progress resets the timeout, so a chatty tool is still bounded by this many timeouts in total. */
const MAX_TOTAL_TIMEOUTS = 10;
/** Longer than any call may run: the SDK's default timeout (60 s) would otherwise apply. */
const NO_SDK_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * One tool call on a live session: its deadline (see CallDeadline), its questions to the
 * person, and its end as soon as the session is lost. Never throws: a failure is told.
 */
export async function callOnSession(
  session: Session,
  config: ServerConfig,
  tool: string,
  args: Record<string, unknown>,
  opts: ToolCallOptions,
  timeoutMs: number,
): Promise<CallAnswer> {
  const server = config.name;
  const onProgress = opts.onProgress;
  const deadline = new CallDeadline(timeoutMs, timeoutMs * MAX_TOTAL_TIMEOUTS);
  // Aborts when the call ends, however it ends (see Asker.over).
  const over = new AbortController();
  const userElicit = opts.elicit;
  // A page this call's own error asked the person to open (the -32042 error) is this call's alone.
  const elicit: Elicit | undefined =
    userElicit &&
    ((question, signal) => deadline.during(userElicit(question, AbortSignal.any([signal, over.signal]))));
  const asker: Asker | undefined = userElicit && {
    elicit: userElicit,
    conversation: opts.conversation ?? "",
    startedAt: Date.now(),
    deadline,
    over: over.signal,
  };
  if (asker) session.askers.add(asker);
  const signal = opts.signal ? AbortSignal.any([opts.signal, deadline.signal]) : deadline.signal;
  // Client.callTool would throw the result away when it does not match the tool's
  // outputSchema (see output-check.ts); its other check, for tools that require tasks, is
  // the catalog's (servableTools never offers them).
  const callTool = () =>
    session.client.request(
      { method: "tools/call", params: { name: tool, arguments: args } },
      CallToolResultSchema,
      {
        // The deadline above is the call's timeout; the SDK's own would run on through a form.
        timeout: NO_SDK_TIMEOUT_MS,
        signal,
        onprogress: (p) => {
          deadline.renew();
          if (!onProgress) return;
          try {
            onProgress({ progress: p.progress, total: p.total, message: p.message });
          } catch (err) {
            log.warn({ err, server, tool }, "progress listener threw");
          }
        },
      },
    );
  const request = withUrlPrerequisites(
    callTool,
    { ...(elicit && { elicit }), ...(opts.signal && { signal: opts.signal }) },
    server,
    session.completions,
  );
  let wake: (why: string | CallFailure) => void = () => {};
  const lost = new Promise<CallAnswer>((resolve) => {
    wake = (why) =>
      resolve({
        failure:
          typeof why === "string"
            ? {
                kind: "connection",
                text: `The tool's server stopped before it answered (${why}). ${OUTCOME_UNKNOWN} It is being restarted.`,
              }
            : why,
      });
  });
  session.waiting.add(wake);
  const answer = await Promise.race([
    request.then(
      (result): CallAnswer => ({ result: result as CallToolResult }),
      (err: unknown): CallAnswer => ({
        failure: describeCallFailure(
          err,
          timeoutMs,
          opts.signal?.aborted === true,
          config,
          session.challenge,
        ),
      }),
    ),
    lost,
  ]).finally(() => {
    deadline.dispose();
    over.abort();
    session.waiting.delete(wake);
    if (asker) session.askers.delete(asker);
  });
  return answer;
}
