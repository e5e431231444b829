import { safeAddress } from "./url-credentials.js";

/**
 * Why an endpoint could not be used, in words an operator can act on: the network error
 * codes Node and undici put somewhere in an error's `cause` chain, named. Nothing here
 * reaches the network; it only reads errors.
 */

const CAUSES: Record<string, string> = {
  ECONNREFUSED: "connection refused (nothing listens there)",
  ENOTFOUND: "the host name does not resolve (DNS)",
  EAI_AGAIN: "the host name could not be resolved now (DNS)",
  ECONNRESET: "the connection was reset",
  EPIPE: "the connection was closed while sending",
  ETIMEDOUT: "the connection timed out",
  EHOSTUNREACH: "the host is unreachable",
  ENETUNREACH: "the network is unreachable",
  UND_ERR_CONNECT_TIMEOUT: "the connection timed out",
  UND_ERR_SOCKET: "the connection was closed unexpectedly",
  CERT_HAS_EXPIRED: "TLS: the server's certificate has expired",
  DEPTH_ZERO_SELF_SIGNED_CERT: "TLS: the server's certificate is self-signed",
  SELF_SIGNED_CERT_IN_CHAIN: "TLS: a self-signed certificate is in the chain",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "TLS: the server's certificate cannot be verified",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "TLS: the certificate's issuer is not trusted here",
  ERR_TLS_CERT_ALTNAME_INVALID: "TLS: the certificate is for another host name",
  EPROTO: "TLS or protocol error (is it https on a plain http port?)",
  ERR_SSL_WRONG_VERSION_NUMBER: "TLS or protocol error (is it https on a plain http port?)",
};

/** `err` and every error behind it: its `cause` chain, with the members of aggregates. */
function* causes(err: unknown, seen = new Set<unknown>()): Generator<object> {
  // `cause` (Node, undici, our own errors) or `original` (the Slack SDK's request errors).
  const next = (e: object) => (e as { cause?: unknown }).cause ?? (e as { original?: unknown }).original;
  for (let e: unknown = err; e && typeof e === "object" && !seen.has(e); e = next(e)) {
    seen.add(e);
    yield e;
    // undici's aggregate of several addresses tried (IPv4 and IPv6).
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors)) for (const inner of errors) yield* causes(inner, seen);
  }
}

/** The network reason behind `err`, as a sentence part; undefined when it is not a network failure. */
export function networkReason(err: unknown): string | undefined {
  for (const e of causes(err)) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && CAUSES[code]) return CAUSES[code];
    if ((e as { name?: unknown }).name === "TimeoutError") return "no answer in time";
  }
  return undefined;
}

/** Failures of the connection itself, before a byte of the request is written. */
const BEFORE_SENDING = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
  "CERT_HAS_EXPIRED",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "ERR_SSL_WRONG_VERSION_NUMBER",
]);

/**
 * Whether `err` is a failure to connect (DNS, refused, unreachable, TLS handshake), so the
 * request it was for never left. A connection reset, closed or timed out once open may
 * have carried the request first: those are not.
 */
export function neverSent(err: unknown): boolean {
  for (const e of causes(err)) {
    const { code, syscall } = e as { code?: unknown; syscall?: unknown };
    if (syscall === "connect" || syscall === "getaddrinfo") return true;
    if (typeof code === "string" && BEFORE_SENDING.has(code)) return true;
  }
  return false;
}

/** "could not reach http://127.0.0.1:9/v1: connection refused (nothing listens there)". */
export function unreachable(url: string, err: unknown): string | undefined {
  const why = networkReason(err);
  return why ? `could not reach ${safeAddress(url)}: ${why}` : undefined;
}

/**
 * A platform that could not be started, as the operator reads it at `npm start`: where it
 * was reached and why it failed (the network, or the token refused), and which setting to
 * check. Undefined when the error says neither (it is then shown as it is).
 */
export function connectFailure(
  platform: "Slack" | "Discord",
  url: string,
  err: unknown,
  /** The token the failed call was made with; the bot's unless told. */
  token: string = platform === "Slack" ? "SLACK_BOT_TOKEN" : "DISCORD_TOKEN",
): { message: string } | undefined {
  const setting = platform === "Slack" ? "SLACK_API_URL" : "DISCORD_API_URL";
  const why = networkReason(err);
  if (why)
    return {
      message: `Could not connect to ${platform} at ${safeAddress(url)}: ${why}. Check ${setting} and the network.`,
    };
  const code =
    (err as { code?: unknown; data?: { error?: unknown } })?.data?.error ?? (err as { code?: unknown })?.code;
  if (
    code === "invalid_auth" ||
    code === "not_authed" ||
    code === "account_inactive" ||
    // A token of another kind (a bot token as SLACK_APP_TOKEN, say).
    code === "not_allowed_token_type" ||
    code === "TokenInvalid"
  )
    return {
      message: `${platform} refused ${token} (${String(code)}). Check the token; it may have been revoked or mistyped.`,
    };
  return undefined;
}
