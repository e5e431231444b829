import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { SwitchboardError } from "../../core/errors.js";

/**
 * What became of a token the MCP server refused: another to send instead; none to be had
 * (no sign-in left, or no refresh token: the SDK then asks for a sign-in); or a refresh
 * that failed for now (the authorization server did not answer, or another replica held
 * the refresh too long), which leaves the sign-in as it was.
 */
export type Renewal = { token: string } | "signed-out" | "failed";

/**
 * The fetch of a connection that signs in with OAuth. A request the MCP server refuses
 * with 401 though its token has not reached its stated expiry (revoked early, no
 * `expires_in`, clock skew) is sent again once with the token `renew` gives. The SDK's
 * transport would refresh by itself instead, once per refused request and without the
 * store's lock: two refused at once spent a rotating refresh token twice, the second was
 * refused, and the SDK then dropped the tokens the first had just saved. `perUser`: the
 * token is the person's own sign-in, not the bot's, as the sentences say.
 */
export function renewingFetch(
  server: string,
  renew: (refused: string) => Promise<Renewal>,
  perUser = false,
): FetchLike {
  const whose = perUser ? `the person's own sign-in to ${server}` : `the bot's sign-in to ${server}`;
  return async (url, init) => {
    const response = await fetch(url, init);
    if (response.status !== 401) return response;
    const headers = new Headers(init?.headers);
    const sent = /^Bearer (.+)$/i.exec(headers.get("authorization") ?? "")?.[1];
    // Not a request with our token (discovery, the token endpoint): the SDK reads its answer.
    if (!sent) return response;
    let renewal: Renewal;
    try {
      renewal = await renew(sent);
    } catch (err) {
      // Unread, the refused answer would hold its connection until it is collected.
      await response.body?.cancel().catch(() => undefined);
      throw new SwitchboardError("store_unavailable", `the sign-in to ${server} could not be renewed`, {
        cause: err,
        userMessage: `The tool's server refused ${whose} as expired, and the bot could not renew it just now (its store did not answer), so the request was not sent. Try again in a moment.`,
      });
    }
    if (renewal === "signed-out") return response;
    await response.body?.cancel().catch(() => undefined);
    if (renewal === "failed") {
      throw new SwitchboardError(
        "tool_failed",
        `the sign-in to ${server} expired and could not be renewed now`,
        {
          userMessage: `The tool's server refused ${whose} as expired, and its authorization server did not renew it just now, so the request was not sent. Try again in a moment.`,
        },
      );
    }
    headers.set("authorization", `Bearer ${renewal.token}`);
    return fetch(url, { ...init, headers });
  };
}
