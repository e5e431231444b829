import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ErrorCode, WebClient } from "@slack/web-api";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { webApiFetch } from "./web-api-fetch.js";

/** What the server last received, and how it answers each path. */
let last: { method?: string; headers: IncomingMessage["headers"]; body: string } = { headers: {}, body: "" };
let server: Server;
let base: string;

function answer(req: IncomingMessage, res: ServerResponse, body: string): void {
  last = { method: req.method, headers: req.headers, body };
  switch (req.url) {
    case "/api/chat.postMessage":
      res.setHeader("Content-Type", "application/json; charset=utf-8");
      res.setHeader("X-OAuth-Scopes", "chat:write");
      res.setHeader("Set-Cookie", ["a=1", "b=2"]);
      res.end(JSON.stringify({ ok: true, ts: "1.000100", echoed: body }));
      return;
    case "/api/chat.update":
      res.writeHead(429, { "Retry-After": "7", "Content-Type": "application/json" });
      res.end(JSON.stringify({ ok: false, error: "ratelimited" }));
      return;
    case "/api/users.info":
      res.writeHead(503, { "Content-Type": "text/plain", "X-Slack-Req-Id": "r1" });
      res.end("upstream down");
      return;
    case "/api/moved":
      res.writeHead(302, { Location: "http://127.0.0.1:1/elsewhere" });
      res.end();
      return;
    case "/api/slow":
      setTimeout(() => res.end("{}"), 5_000).unref();
      return;
    default:
      res.writeHead(404);
      res.end();
  }
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => {
      body += c;
    });
    req.on("end", () => answer(req, res, body));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("webApiFetch", () => {
  it("sends the method, headers and body, and answers as fetch would", async () => {
    const res = await webApiFetch(`${base}chat.postMessage`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Authorization: "Bearer xoxb-1" },
      body: "channel=C1&text=hi%20there",
      redirect: "error",
    });
    expect(res).not.toBeInstanceOf(Response);
    expect(last.method).toBe("POST");
    expect(last.headers.authorization).toBe("Bearer xoxb-1");
    expect(last.body).toBe("channel=C1&text=hi%20there");
    expect(res.status).toBe(200);
    expect(res.ok).toBe(true);
    expect(res.statusText).toBe("OK");
    expect(res.url).toBe(`${base}chat.postMessage`);
    expect(res.headers.get("x-oauth-scopes")).toBe("chat:write");
    expect(res.headers.get("X-OAUTH-SCOPES")).toBe("chat:write");
    expect(res.headers.get("set-cookie")).toBe("a=1, b=2");
    expect(res.headers.get("retry-after")).toBeNull();
    expect(Object.fromEntries(res.headers.entries())).toMatchObject({ "x-oauth-scopes": "chat:write" });
    expect(await res.json()).toEqual({ ok: true, ts: "1.000100", echoed: "channel=C1&text=hi%20there" });
    expect(res.bodyUsed).toBe(true);
    await expect(res.text()).rejects.toThrow(/already read/);
  });

  it("takes headers as a Headers object or pairs, and reads a body as bytes", async () => {
    const headers = new Headers({ "X-One": "1" });
    await webApiFetch(`${base}chat.postMessage`, {
      method: "POST",
      headers,
      body: new Uint8Array([104, 105]),
    });
    expect(last.headers["x-one"]).toBe("1");
    expect(last.body).toBe("hi");
    const res = await webApiFetch(`${base}chat.postMessage`, {
      method: "POST",
      headers: [["X-Two", "2"]],
      redirect: "error",
    });
    expect(res).not.toBeInstanceOf(Response);
    expect(last.headers["x-two"]).toBe("2");
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect(JSON.parse(Buffer.from(bytes).toString("utf8")).ok).toBe(true);
  });

  it("fails on a redirect, as fetch does when asked for redirect: error", async () => {
    await expect(
      webApiFetch(`${base}moved`, { method: "POST", body: "", redirect: "error" }),
    ).rejects.toThrow(/answered with a redirect/);
  });

  it("stops when its signal is aborted", async () => {
    const controller = new AbortController();
    const pending = webApiFetch(`${base}slow`, {
      method: "POST",
      body: "",
      redirect: "error",
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 50);
    await expect(pending).rejects.toThrow(/abort/i);
  });

  it("leaves what is not a plain request that must not follow redirects to the global fetch", async () => {
    const form = new FormData();
    form.append("channel", "C9");
    const res = await webApiFetch(`${base}chat.postMessage`, {
      method: "POST",
      body: form,
      redirect: "error",
    });
    expect(res).toBeInstanceOf(Response);
    expect(last.headers["content-type"]).toMatch(/^multipart\/form-data/);
    expect(last.body).toContain("C9");
    // Bolt's respond() posts without saying: fetch's default, redirects followed.
    const followed = await webApiFetch(`${base}chat.postMessage`, { method: "POST", body: "{}" });
    expect(followed).toBeInstanceOf(Response);
    expect(await followed.json()).toMatchObject({ ok: true });
  });
});

describe("WebClient through webApiFetch", () => {
  const client = () =>
    new WebClient("xoxb-test", {
      slackApiUrl: base,
      fetch: webApiFetch,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
    });

  it("gets the call's result with its scopes, without the global fetch", async () => {
    const global = vi.spyOn(globalThis, "fetch");
    const result = await client().chat.postMessage({ channel: "C1", text: "hello" });
    expect(global).not.toHaveBeenCalled();
    global.mockRestore();
    expect(result.ok).toBe(true);
    expect(result.ts).toBe("1.000100");
    expect(result.response_metadata?.scopes).toEqual(["chat:write"]);
    expect(last.headers.authorization).toBe("Bearer xoxb-test");
  });

  it("reads a 429's Retry-After", async () => {
    await expect(client().chat.update({ channel: "C1", ts: "1.0", text: "x" })).rejects.toMatchObject({
      code: ErrorCode.RateLimitedError,
      retryAfter: 7,
    });
  });

  it("reports another status with its headers and body", async () => {
    await expect(client().users.info({ user: "U1" })).rejects.toMatchObject({
      code: ErrorCode.HTTPError,
      statusCode: 503,
      statusMessage: "Service Unavailable",
      headers: expect.objectContaining({ "x-slack-req-id": "r1" }),
      body: "upstream down",
    });
  });
});
