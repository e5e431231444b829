import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { SwitchboardError } from "../core/errors.js";
import { log } from "../log.js";
import { CALLBACK_PATH } from "../mcp/oauth/setup.js";
import type { CallbackOutcome } from "../mcp/oauth/sign-ins.js";
import type { ToolHub } from "../mcp/types.js";
import type { Adapter } from "../runtime/contract.js";
import type { Store } from "../store/index.js";
import type { Metrics } from "./metrics.js";

export interface HealthDeps {
  adapters: () => Adapter[];
  store: Store;
  hub: ToolHub;
  metrics: Metrics;
  /** `/oauth/callback`: where a tool server's sign-in comes back. */
  oauthCallback?: (params: URLSearchParams) => Promise<CallbackOutcome>;
}

export interface HealthServer {
  url: string;
  close(): Promise<void>;
}

/**
 * `/healthz`: the process is up. `/readyz`: every adapter is connected and the store
 * answers; MCP servers are listed but a broken tool server does not make the bot unready.
 * `/metrics`: Prometheus text.
 */
export async function startHealthServer(host: string, port: number, deps: HealthDeps): Promise<HealthServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
      res.end(body);
    };
    if (req.method !== "GET") return send(405, "text/plain", "GET only\n");
    if (path === "/healthz") return send(200, "text/plain", "ok\n");
    if (path === "/readyz") {
      readiness(deps).then(
        (r) => send(r.ready ? 200 : 503, "application/json", `${JSON.stringify(r)}\n`),
        (err: unknown) =>
          send(503, "application/json", `${JSON.stringify({ ready: false, error: String(err) })}\n`),
      );
      return;
    }
    if (path === "/metrics") {
      deps.metrics.render().then(
        (text) => send(200, deps.metrics.registry.contentType, text),
        (err: unknown) => send(500, "text/plain", `${String(err)}\n`),
      );
      return;
    }
    if (path === CALLBACK_PATH && deps.oauthCallback) {
      const params = new URL(req.url ?? "/", "http://callback").searchParams;
      deps.oauthCallback(params).then(
        (outcome) => send(outcome.ok ? 200 : 400, "text/html; charset=utf-8", page(outcome.text)),
        () =>
          send(500, "text/html; charset=utf-8", page("The sign-in failed inside the bot. Start it again.")),
      );
      return;
    }
    send(404, "text/plain", "not found: try /healthz, /readyz or /metrics\n");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err) => reject(listenRefused(err, host, port)));
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${address.port}`;
  log.info({ url }, "health server listening");
  return {
    url,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Why the health server could not listen, and what to set instead: a second replica on one machine meets it first. */
function listenRefused(err: NodeJS.ErrnoException, host: string, port: number): Error {
  const where = `${host}:${port}`;
  const what =
    err.code === "EADDRINUSE"
      ? `the health server could not listen on ${where}: another process has that port (another Switchboard on this machine?)`
      : err.code === "EACCES"
        ? `the health server may not listen on ${where} (ports below 1024 need privileges)`
        : err.code === "EADDRNOTAVAIL"
          ? `the health server could not listen on ${where}: this machine has no such address`
          : undefined;
  if (!what) return err;
  const fix = "Set health.port in switchboard.yaml to a free port (0 picks one), or health.enabled: false.";
  return new SwitchboardError("platform_error", `${what}. ${fix}`, { cause: err });
}

async function readiness(deps: HealthDeps) {
  const adapters = deps.adapters().map((a) => ({ platform: a.platform, connected: a.ready() }));
  const store = await deps.store.ping().catch(() => false);
  const mcp = deps.hub.status().map((s) => ({ name: s.name, state: s.state, tools: s.toolCount }));
  const ready = store && adapters.length > 0 && adapters.every((a) => a.connected);
  return { ready, store, adapters, mcp };
}

/** The page a browser shows at the end of a sign-in: one sentence, escaped. */
function page(text: string): string {
  const escaped = text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html><meta charset="utf-8"><title>Switchboard</title><p>${escaped}</p>\n`;
}
