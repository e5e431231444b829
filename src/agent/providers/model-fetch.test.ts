import { AsyncLocalStorage } from "node:async_hooks";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bodyStreamOf, modelFetch } from "./model-fetch.js";
import { readSse, type SseMessage } from "./sse.js";

/** What the test server saw of each request. */
interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

let server: Server;
let base: string;
const seen: Seen[] = [];
/** Sockets the server accepted: the SDK's retries after an error answer go on the same one. */
let connections = 0;

const EVENTS = ["data: one\n\n", "data: two\n\n", "data: three\n\n", "data: [DONE]\n\n"];

async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
  let body = "";
  for await (const chunk of req) body += chunk;
  seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
  if (req.url === "/sse") {
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const event of EVENTS) {
      res.write(event);
      await new Promise((r) => setTimeout(r, 5));
    }
    res.end();
  } else if (req.url === "/endless") {
    // Streams until the client goes: a reader that stops early must let it go.
    res.writeHead(200, { "content-type": "text/event-stream" });
    const timer = setInterval(() => res.write("data: more\n\n"), 5);
    res.on("close", () => clearInterval(timer));
  } else if (req.url === "/cut") {
    // The server goes away in the middle of the answer.
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write("data: 1\n\ndata: half");
    setTimeout(() => res.socket?.destroy(), 10);
  } else if (req.url === "/moved") {
    res.writeHead(307, { location: "/sse" });
    res.end();
  } else if (req.url === "/cookies") {
    res.setHeader("set-cookie", ["a=1", "b=2"]);
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"ok":true}');
  } else if (req.url === "/empty") {
    res.writeHead(204);
    res.end();
  } else if (req.url === "/v1/chat/completions") {
    res.writeHead(429, { "content-type": "application/json", "retry-after": "0" });
    res.end('{"error":{"message":"slow down","type":"rate_limit"}}');
  } else {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end(`echo ${body}`);
  }
}

beforeAll(async () => {
  server = createServer((req, res) => void answer(req, res));
  server.on("connection", () => connections++);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  server.close();
});

async function messagesOf(response: Response): Promise<string[]> {
  const out: string[] = [];
  await readSse(response, (m: SseMessage) => {
    out.push(m.data);
    return true;
  });
  return out;
}

describe("the fetch the model SDKs are given", () => {
  it("sends the method, headers and text body, and answers with status, headers and text", async () => {
    const response = await modelFetch(`${base}/echo`, {
      method: "post",
      headers: new Headers({ "content-type": "application/json", authorization: "Bearer sk-test" }),
      body: '{"q":1}',
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/plain");
    expect(await response.text()).toBe('echo {"q":1}');
    const request = seen.at(-1)!;
    expect(request).toMatchObject({ method: "POST", url: "/echo", body: '{"q":1}' });
    expect(request.headers.authorization).toBe("Bearer sk-test");
  });

  it("hands a stream's body to the SSE reader as undici gives it, once, and to nobody after it was read", async () => {
    const direct = await modelFetch(`${base}/sse`, { method: "POST", body: "{}" });
    expect(bodyStreamOf(direct)).toBeDefined();
    expect(await messagesOf(direct)).toEqual(["one", "two", "three", "[DONE]"]);
    expect(direct.bodyUsed).toBe(false);

    // Read through `response.body` (another reader), the same messages, and no direct body after.
    const web = await modelFetch(`${base}/sse`, { method: "POST", body: "{}" });
    const reader = web.body!.getReader();
    const first = await reader.read();
    expect(bodyStreamOf(web)).toBeUndefined();
    let text = new TextDecoder().decode(first.value);
    for (let r = await reader.read(); !r.done; r = await reader.read())
      text += new TextDecoder().decode(r.value);
    expect(text).toBe(EVENTS.join(""));
  });

  it("lets a stream go when its reader stops early, and the connection serves the next request", async () => {
    const response = await modelFetch(`${base}/endless`, { method: "POST", body: "{}" });
    const got: string[] = [];
    await readSse(response, (m) => {
      got.push(m.data);
      return got.length < 3;
    });
    expect(got).toEqual(["more", "more", "more"]);
    const failing = await modelFetch(`${base}/endless`, { method: "POST", body: "{}" });
    await expect(readSse(failing, (m) => JSON.parse(m.data))).rejects.toThrow(SyntaxError);
    // No unhandled error from the body let go (vitest fails the run on one), and a
    // request after it is answered.
    const next = await modelFetch(`${base}/echo`, { method: "POST", body: "after" });
    expect(await next.text()).toBe("echo after");
  });

  it("fails a stream whose connection closes before its end, with what came before it handed on", async () => {
    const response = await modelFetch(`${base}/cut`, { method: "POST", body: "{}" });
    const got: string[] = [];
    const reading = readSse(response, (m) => {
      got.push(m.data);
      return true;
    });
    await expect(reading).rejects.toBeInstanceOf(Error);
    expect(got).toEqual(["1"]);
  });

  it("hands each message on in the reader's async context, not the one the connection was opened in", async () => {
    const context = new AsyncLocalStorage<string>();
    // The first answer opens the connection under "opener"; the second reuses it under "reader".
    await context.run("opener", async () => {
      await messagesOf(await modelFetch(`${base}/sse`, { method: "POST", body: "{}" }));
    });
    const seenIn: Array<string | undefined> = [];
    await context.run("reader", async () => {
      const response = await modelFetch(`${base}/sse`, { method: "POST", body: "{}" });
      await readSse(response, () => {
        seenIn.push(context.getStore());
        return true;
      });
    });
    expect(seenIn).toEqual(["reader", "reader", "reader", "reader"]);
  });

  it("follows a redirect, as fetch does, with the method and body kept on a 307", async () => {
    const response = await modelFetch(`${base}/moved`, { method: "POST", body: '{"again":true}' });
    expect(response.status).toBe(200);
    expect(await messagesOf(response)).toEqual(["one", "two", "three", "[DONE]"]);
    expect(seen.at(-1)).toMatchObject({ method: "POST", url: "/sse", body: '{"again":true}' });
  });

  it("keeps every value of a repeated header, and answers a 204 without a body", async () => {
    const cookies = await modelFetch(`${base}/cookies`);
    expect(cookies.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    expect(await cookies.json()).toEqual({ ok: true });
    const empty = await modelFetch(`${base}/empty`);
    expect(empty.status).toBe(204);
    expect(empty.body).toBeNull();
  });

  it("sends a body it does not take as is (a form) through the global fetch", async () => {
    const form = new FormData();
    form.set("field", "value");
    const response = await modelFetch(`${base}/echo`, { method: "POST", body: form });
    expect(bodyStreamOf(response)).toBeUndefined();
    expect(seen.at(-1)!.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/);
    expect(await response.text()).toContain('name="field"');
  });

  it("stops reading when the request is aborted midway, with the abort's reason", async () => {
    const controller = new AbortController();
    const response = await modelFetch(`${base}/endless`, {
      method: "POST",
      body: "{}",
      signal: controller.signal,
    });
    const got: string[] = [];
    const reading = readSse(response, (m) => {
      got.push(m.data);
      if (got.length === 2) controller.abort();
      return true;
    });
    await expect(reading).rejects.toMatchObject({ name: "AbortError" });
    expect(got.length).toBeGreaterThanOrEqual(2);
  });

  it("carries the SDK's retries: an error answer is read, dropped and asked again on the same connection", async () => {
    const before = connections;
    const client = new OpenAI({ apiKey: "sk-test", baseURL: `${base}/v1`, maxRetries: 2, fetch: modelFetch });
    const asked = seen.length;
    await expect(
      client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] }),
    ).rejects.toMatchObject({ status: 429, message: expect.stringContaining("slow down") });
    expect(seen.length - asked).toBe(3);
    // The retries reused the connection their error answers came on.
    expect(connections - before).toBeLessThanOrEqual(1);
  });
});
