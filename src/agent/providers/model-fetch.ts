import { Agent, type Dispatcher, interceptors, request } from "undici";

/*
 * The fetch the OpenAI and Anthropic SDKs are given. The SDK still builds each request,
 * sets its timeout, retries it and reads its errors; only the HTTP exchange is undici's
 * request() instead of Node's fetch(), and the model's stream is read (sse.ts) from the
 * body as undici hands it, without the WHATWG stream and the fetch algorithm that fetch()
 * puts over the same client. A streamed answer is a chunk a word, and every chunk went
 * through them. Measured in a scratch client, 200 streams of the load benchmark's answer
 * (184 chunks each) read at once from the LLM emulator: 1.26-1.45 s of CPU through the
 * SDK with fetch(), 0.89-0.92 s through the SDK with this, 0.84-0.90 s with undici's
 * request() alone. (undici's own fetch(), newer than Node 20's: 1.35-1.39 s.)
 *
 * Anything this does not send as is (a request object, a body other than text or bytes:
 * the SDKs' file uploads) goes to the global fetch, and so does its answer.
 */

/**
 * Keep-alive connections per origin, as fetch's global dispatcher keeps them, and
 * redirects followed as fetch follows them (at most 20): a server behind a proxy that
 * moves its address still answers.
 */
const dispatcher = new Agent().compose(interceptors.redirect({ maxRedirections: 20 }));

/** Each answer's body as undici hands it, for the SSE reader. */
const bodies = new WeakMap<Response, Body>();

/** A response body as undici hands it: a Node stream, with `dump()` to drop the rest. */
type Body = Dispatcher.ResponseData["body"];

/** Statuses whose response has no body (the Response constructor refuses one). */
const NULL_BODY = new Set([101, 204, 205, 304]);

type FetchInput = string | URL | Request;

export async function modelFetch(input: FetchInput, init: RequestInit = {}): Promise<Response> {
  const body = init.body;
  const plain = body === undefined || body === null || typeof body === "string" || body instanceof Uint8Array;
  if (input instanceof Request || !plain) return fetch(input, init);
  const method = (init.method ?? "GET").toUpperCase();
  const answer = await request(input, {
    method: method as "GET",
    headers: init.headers instanceof Headers ? init.headers : new Headers(init.headers),
    body: body ?? null,
    signal: init.signal ?? undefined,
    dispatcher,
  });
  const headers = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) {
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else if (value !== undefined) headers.append(name, value);
  }
  if (NULL_BODY.has(answer.statusCode) || method === "HEAD") {
    await answer.body.dump().catch(() => undefined);
    return new Response(null, { status: answer.statusCode, headers });
  }
  const response = new Response(pulledFrom(answer.body), { status: answer.statusCode, headers });
  bodies.set(response, answer.body);
  return response;
}

/**
 * The response's body as undici hands it, when modelFetch made the response and nothing
 * has read it through `response.body` yet; else undefined (read `response.body`).
 */
export function bodyStreamOf(response: Response): Body | undefined {
  const body = bodies.get(response);
  if (!body || response.bodyUsed || response.body?.locked) return undefined;
  return body;
}

/**
 * A WHATWG stream over undici's body, for the SDKs' own reading (an error's text, a
 * JSON answer): it reads nothing until it is read, so the SSE reader can take the body
 * itself instead. Cancelling it (the SDKs do before a retry) lets the connection go.
 */
function pulledFrom(body: Body): ReadableStream<Uint8Array> {
  let chunks: AsyncIterator<Buffer> | undefined;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        chunks ??= body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
        const { done, value } = await chunks.next();
        if (done) controller.close();
        else controller.enqueue(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
      },
      cancel() {
        // What is left is read and dropped (up to undici's limit), so that the connection
        // can serve the retry; an error there only means the connection went.
        body.dump().catch(() => undefined);
      },
    },
    { highWaterMark: 0 },
  );
}
