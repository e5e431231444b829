import { STATUS_CODES } from "node:http";
import { Agent, request } from "undici";

/*
 * The fetch Slack's WebClient is given (its `fetch` option), for Bolt's client and ours.
 * WebClient sends every call as a form or JSON POST and reads the answer whole (its
 * status, three headers, its text); through Node's fetch each call also built a Request
 * with its own AbortSignal, ran the fetch algorithm and read the answer through a WHATWG
 * stream. Here the exchange is undici's request() and the answer is read as bytes. In the
 * load benchmark's Slack crowd (200 threads, about 900 Web API calls) Node's fetch was
 * about 8 % of the bot's time in V8's profile.
 *
 * What it sends itself is exactly what WebClient sends: a plain request (text or bytes)
 * that must not follow a redirect. Anything else (a Request object, a file upload's form,
 * Bolt's `respond`, which follows redirects as fetch does by default) goes to the global fetch.
 */

/** Keep-alive connections per origin, as fetch's global dispatcher keeps them. */
const dispatcher = new Agent();

type FetchInput = string | URL | Request;

export async function webApiFetch(input: FetchInput, init: RequestInit = {}): Promise<Response> {
  const body = init.body;
  const plain = body === undefined || body === null || typeof body === "string" || body instanceof Uint8Array;
  if (input instanceof Request || !plain || init.redirect !== "error") return fetch(input, init);
  const url = String(input);
  const answer = await request(url, {
    method: (init.method ?? "GET").toUpperCase() as "GET",
    headers: headerRecord(init.headers),
    body: body ?? null,
    signal: init.signal ?? undefined,
    dispatcher,
  });
  const status = answer.statusCode;
  // As fetch with `redirect: "error"`: a redirect fails the call rather than being followed.
  if (status >= 300 && status < 400 && answer.headers.location !== undefined) {
    await answer.body.dump().catch(() => undefined);
    throw new TypeError(
      `The Slack API at ${new URL(url).origin} answered with a redirect (HTTP ${status}), which Slack's API never does: check that SLACK_API_URL, if set, is the API's own address.`,
    );
  }
  const bytes = Buffer.from(await answer.body.arrayBuffer());
  return new WholeResponse(url, status, new PlainHeaders(answer.headers), bytes) as unknown as Response;
}

/** The request's headers as undici takes them, whichever form fetch was given them in. */
function headerRecord(headers: RequestInit["headers"]): Record<string, string> {
  if (!headers) return {};
  if (headers instanceof Headers || Array.isArray(headers)) return Object.fromEntries(headers);
  return headers as Record<string, string>;
}

type RawHeaders = Record<string, string | string[] | undefined>;

/**
 * The answer's headers as WebClient reads them from fetch's `Headers` (`get`, `entries`:
 * names without case, repeated values joined), over the object undici hands back,
 * without copying them.
 */
class PlainHeaders {
  constructor(private readonly raw: RawHeaders) {}

  get(name: string): string | null {
    const value = this.raw[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(", ") : value;
  }

  *entries(): IterableIterator<[string, string]> {
    for (const name of Object.keys(this.raw).sort()) {
      const value = this.get(name);
      if (value !== null) yield [name, value];
    }
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
}

/**
 * An answer read whole, with the part of fetch's `Response` that WebClient and Bolt's
 * `respond` read: status, headers, url and the body as text, JSON or bytes, once.
 */
class WholeResponse {
  readonly ok: boolean;
  readonly statusText: string;
  readonly redirected = false;
  readonly type = "basic";
  private used = false;

  constructor(
    readonly url: string,
    readonly status: number,
    readonly headers: PlainHeaders,
    private readonly bytes: Buffer,
  ) {
    this.ok = status >= 200 && status < 300;
    this.statusText = STATUS_CODES[status] ?? "";
  }

  get bodyUsed(): boolean {
    return this.used;
  }

  async text(): Promise<string> {
    return this.take().toString("utf8");
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = this.take();
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  }

  /** The body, which like fetch's can be read once. */
  private take(): Buffer {
    if (this.used) throw new TypeError("The response's body was already read.");
    this.used = true;
    return this.bytes;
  }
}
