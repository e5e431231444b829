/**
 * A URL's credentials kept out of logs and errors. Operators write a password as it is,
 * and a password holding `/`, `?`, `#`, `@` or `:` (as generated ones do) is not always
 * read by `new URL` as they meant: it may not parse at all, or it may parse as something
 * else, its user name taken for the host and the start of its password for the port,
 * the rest for a path, query or fragment (`redis://default:1234#x@redis:6379`). So where
 * the parser did not read the URL as written, it is read as operators write it: the
 * user-info runs from after `scheme://` to the last `@`.
 */

/** From after `scheme://` to the last `@`: the user-info as an operator writes it. */
const WRITTEN_USER_INFO = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)(.*)@([^@]*)$/s;

/** The user name, the password (undefined without a colon) and what follows the last `@`. */
interface WrittenUserInfo {
  scheme: string;
  user: string;
  password?: string;
  rest: string;
}

function writtenUserInfo(url: string): WrittenUserInfo | undefined {
  const m = WRITTEN_USER_INFO.exec(url);
  if (!m) return undefined;
  const [, scheme = "", info = "", rest = ""] = m;
  const colon = info.indexOf(":");
  return colon < 0
    ? { scheme, user: info, rest }
    : { scheme, user: info.slice(0, colon), password: info.slice(colon + 1), rest };
}

/**
 * Whether `new URL` reads `url` as it was written: it parses, and no `@` follows the
 * authority it found, but one that starts a path segment (`/@scope/server`, as some MCP
 * hosts' addresses have). Any other is, all but always, the rest of a user name or
 * password that holds `/`, `?` or `#`, which ended the authority early; a query with an
 * `@` of its own is taken for one too, so that a password never shows (it must then be
 * written `%40`).
 */
export function parsesAsWritten(url: string): boolean {
  if (!URL.canParse(url)) return false;
  const u = new URL(url);
  return !/(?:^|[^/])@/.test(u.pathname) && !`${u.search}${u.hash}`.includes("@");
}

/** The URL as it may appear in logs and errors: any password replaced by `***`. */
export function withoutPassword(url: string): string {
  if (parsesAsWritten(url)) {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  }
  const written = writtenUserInfo(url);
  if (!written) return url;
  // With no colon the whole user-info goes: a user name alone is often a token.
  const info = written.password === undefined ? "***" : `${written.user}:***`;
  return `${written.scheme}${info}@${written.rest}`;
}

/** The password in a URL's user-info (as written and decoded), to be scrubbed from logs and errors. */
export function urlCredentials(url: string | undefined): string[] {
  if (!url) return [];
  const written = parsesAsWritten(url) ? undefined : writtenUserInfo(url);
  const password = written
    ? (written.password ?? written.user)
    : URL.canParse(url)
      ? new URL(url).password
      : "";
  if (!password) return [];
  let decoded = password;
  try {
    decoded = decodeURIComponent(password);
  } catch {
    // A stray "%" the parser never checked: the password as written is all there is to scrub.
  }
  return [...new Set([password, decoded])];
}

/** Whether a URL carries a user name or password (which `fetch` refuses to send). */
export function carriesUserInfo(url: string): boolean {
  if (!parsesAsWritten(url)) return writtenUserInfo(url) !== undefined;
  const u = new URL(url);
  return u.username !== "" || u.password !== "";
}

/** A path segment made of a token's characters, long enough to be a key. */
const TOKEN_LIKE = /^[A-Za-z0-9._~%=+-]{16,}$/;

/**
 * Whether a path segment looks like a key rather than a word: Zapier's and Pipedream's
 * MCP addresses carry theirs in the path (`/api/mcp/s/<key>/mcp`, `/<uuid>/gmail`). Two of
 * lower case, upper case and digits mix in a key and seldom in a name; past 32 characters
 * any token is taken for one.
 */
function looksLikeKey(segment: string): boolean {
  if (!TOKEN_LIKE.test(segment)) return false;
  const classes = [/[a-z]/, /[A-Z]/, /[0-9]/].filter((c) => c.test(segment)).length;
  return classes >= 2 || segment.length >= 32;
}

/**
 * An address to show: scheme, host and path, never credentials, a query or a path
 * segment that looks like a key (`***`). A URL the parser misreads shows the host written
 * after its last `@`, never the user name and password start it took for a host and port.
 */
export function safeAddress(url: string): string {
  const written = parsesAsWritten(url) ? undefined : writtenUserInfo(url);
  const shown = written ? `${written.scheme}${written.rest}` : url;
  if (!parsesAsWritten(shown)) return "(not a valid URL)";
  const u = new URL(shown);
  const path = u.pathname
    .split("/")
    .map((segment) => (looksLikeKey(segment) ? "***" : segment))
    .join("/");
  return `${u.protocol}//${u.host}${path === "/" ? "" : path}`;
}

/**
 * The sentence for an address setting that is not a URL as written, its password hidden.
 * The usual cause is a character the URL syntax reserves, written as it is in a password.
 */
export function notAUrl(setting: string, url: string): string {
  return `${setting} is not a URL: ${withoutPassword(url)}. Check it; a user name or password holding / ? # @ : or % must be percent-encoded (%2F for /), and so must an @ after the host (%40).`;
}
