/**
 * A real OAuth-protected MCP server on 127.0.0.1, from the MCP SDK's own server side of
 * the authorization spec: protected-resource and authorization-server metadata, dynamic
 * client registration, PKCE, refresh with rotating refresh tokens, revocation, and
 * `requireBearerAuth` in front of a streamable-HTTP MCP endpoint. Consent is given at once
 * (as a signed-in browser would). Everything it issues and every refresh it answers is
 * recorded, so tests can count refreshes and look for tokens in logs.
 */
import { randomUUID } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import type { OAuthRegisteredClientsStore } from "@modelcontextprotocol/sdk/server/auth/clients.js";
import {
  InvalidGrantError,
  InvalidTokenError,
  ServerError,
} from "@modelcontextprotocol/sdk/server/auth/errors.js";
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js";
import type {
  AuthorizationParams,
  OAuthServerProvider,
} from "@modelcontextprotocol/sdk/server/auth/provider.js";
import {
  getOAuthProtectedResourceMetadataUrl,
  mcpAuthRouter,
} from "@modelcontextprotocol/sdk/server/auth/router.js";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type {
  OAuthClientInformationFull,
  OAuthTokenRevocationRequest,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import express, { type Response } from "express";
import { z } from "zod";
import type { OAuthSignIns } from "../../src/mcp/oauth/sign-ins.js";

interface Issued {
  clientId: string;
  expiresAt: number;
  resource?: URL;
}

class Clients implements OAuthRegisteredClientsStore {
  readonly all = new Map<string, OAuthClientInformationFull>();
  async getClient(id: string) {
    return this.all.get(id);
  }
  async registerClient(client: OAuthClientInformationFull) {
    this.all.set(client.client_id, client);
    return client;
  }
}

class TestAuthProvider implements OAuthServerProvider {
  readonly clientsStore = new Clients();
  readonly codes = new Map<string, { client: string; params: AuthorizationParams }>();
  readonly access = new Map<string, Issued>();
  readonly refresh = new Map<string, { clientId: string; resource?: URL }>();
  /** Every token ever issued, for log checks. */
  readonly issued: string[] = [];
  refreshRequests = 0;
  revoked = 0;
  /** Seconds an access token lives. */
  expiresIn = 3600;
  /** false: token responses leave out `expires_in`, so a client learns of expiry only from a 401. */
  statesExpiry = true;
  /** false: no refresh token is issued (as a GitHub OAuth app), so an expired sign-in needs a new one. */
  issuesRefreshTokens = true;
  /** true: a refresh is answered with a server error (HTTP 500), as by an authorization server that is down. */
  refreshFails = false;

  async authorize(
    client: OAuthClientInformationFull,
    params: AuthorizationParams,
    res: Response,
  ): Promise<void> {
    const code = randomUUID();
    this.codes.set(code, { client: client.client_id, params });
    const target = new URL(params.redirectUri);
    target.searchParams.set("code", code);
    if (params.state !== undefined) target.searchParams.set("state", params.state);
    res.redirect(target.href);
  }

  async challengeForAuthorizationCode(_client: OAuthClientInformationFull, code: string): Promise<string> {
    const found = this.codes.get(code);
    if (!found) throw new InvalidGrantError("unknown authorization code");
    return found.params.codeChallenge;
  }

  async exchangeAuthorizationCode(client: OAuthClientInformationFull, code: string): Promise<OAuthTokens> {
    const found = this.codes.get(code);
    if (!found || found.client !== client.client_id)
      throw new InvalidGrantError("unknown authorization code");
    this.codes.delete(code);
    return this.issue(client.client_id, found.params.resource);
  }

  async exchangeRefreshToken(client: OAuthClientInformationFull, token: string): Promise<OAuthTokens> {
    this.refreshRequests += 1;
    if (this.refreshFails) throw new ServerError("the authorization server is down");
    const found = this.refresh.get(token);
    if (!found || found.clientId !== client.client_id)
      throw new InvalidGrantError("refresh token expired or revoked");
    // Rotating: a refresh token works once.
    this.refresh.delete(token);
    return this.issue(client.client_id, found.resource);
  }

  async verifyAccessToken(token: string): Promise<AuthInfo> {
    const found = this.access.get(token);
    if (!found || found.expiresAt < Date.now()) throw new InvalidTokenError("token expired or revoked");
    return {
      token,
      clientId: found.clientId,
      scopes: [],
      expiresAt: Math.floor(found.expiresAt / 1000),
      ...(found.resource && { resource: found.resource }),
    };
  }

  async revokeToken(
    _client: OAuthClientInformationFull,
    request: OAuthTokenRevocationRequest,
  ): Promise<void> {
    if (this.access.delete(request.token) || this.refresh.delete(request.token)) this.revoked += 1;
  }

  /** The authorization server forgets every token: what an admin's "revoke all sessions" does. */
  revokeAll(): void {
    this.access.clear();
    this.refresh.clear();
  }

  /** An access token made outside OAuth, as a personal access token put in mcp.json's headers. */
  personalAccessToken(): string {
    return this.issue("personal").access_token;
  }

  /** Access tokens stop working before their stated expiry; refresh tokens still work. */
  revokeAccessTokens(): void {
    this.access.clear();
  }

  private issue(clientId: string, resource?: URL): OAuthTokens {
    const access = `at-${randomUUID()}`;
    this.access.set(access, {
      clientId,
      expiresAt: Date.now() + this.expiresIn * 1000,
      ...(resource && { resource }),
    });
    this.issued.push(access);
    const tokens: OAuthTokens = {
      access_token: access,
      token_type: "bearer",
      ...(this.statesExpiry && { expires_in: this.expiresIn }),
    };
    if (!this.issuesRefreshTokens) return tokens;
    const refresh = `rt-${randomUUID()}`;
    this.refresh.set(refresh, { clientId, ...(resource && { resource }) });
    this.issued.push(refresh);
    return { ...tokens, refresh_token: refresh };
  }
}

export interface OAuthMcpServer {
  /** The MCP endpoint (`…/mcp`). */
  url: string;
  auth: TestAuthProvider;
  /** Tool calls answered, by access token. */
  calls: string[];
  /**
   * `slow`: a request whose token is refused gets its 401 with a body that keeps coming (a
   * proxy's error page, say), so the connection is the client's until it reads or cancels
   * it; `open` counts those answers still open.
   */
  refusals: { slow: boolean; open: number };
  close(): Promise<void>;
}

/**
 * Starts the server; its tool `whoami` answers with the number of the token the call
 * carried. With `waitTool`, a tool `wait` answers "waited" after `ms` milliseconds.
 */
export async function startOAuthMcpServer(opts: { waitTool?: boolean } = {}): Promise<OAuthMcpServer> {
  const app = express();
  const auth = new TestAuthProvider();
  const calls: string[] = [];
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  const base = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  const mcpUrl = new URL("/mcp", base);
  app.use(mcpAuthRouter({ provider: auth, issuerUrl: base, resourceServerUrl: mcpUrl }));
  app.use(express.json());
  const refusals = { slow: false, open: 0 };
  app.all("/mcp", (req, res, next) => {
    const token = /^Bearer (.+)$/i.exec(req.headers.authorization ?? "")?.[1];
    const issued = token === undefined ? undefined : auth.access.get(token);
    if (!refusals.slow || token === undefined || (issued && issued.expiresAt >= Date.now())) return next();
    res.status(401).set("WWW-Authenticate", 'Bearer error="invalid_token"').type("text/html");
    res.write("<html><body>Sign in again");
    refusals.open += 1;
    res.on("close", () => {
      refusals.open -= 1;
    });
  });
  app.all(
    "/mcp",
    requireBearerAuth({ verifier: auth, resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl) }),
    async (req, res) => {
      const token = req.auth?.token ?? "";
      const mcp = new McpServer({ name: "secure", version: "1.0.0" });
      mcp.registerTool(
        "whoami",
        { description: "Says which sign-in the call came with", annotations: { readOnlyHint: true } },
        async () => {
          calls.push(token);
          return { content: [{ type: "text", text: `signed in as token #${auth.issued.indexOf(token)}` }] };
        },
      );
      if (opts.waitTool) {
        mcp.registerTool("wait", { inputSchema: { ms: z.number() } }, async ({ ms }) => {
          await sleep(ms);
          return { content: [{ type: "text", text: "waited" }] };
        });
      }
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on("close", () => void transport.close());
      await mcp.connect(transport);
      await transport.handleRequest(req, res, req.body);
    },
  );
  return {
    url: mcpUrl.href,
    auth,
    calls,
    refusals,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A browser signed in at the authorization server, without the bot's HTTP server: follows
 * the sign-in link `url` until the redirect to the callback, and hands that to `finish`.
 */
export async function consentDirectly(signIns: OAuthSignIns, url: string, callback: string): Promise<string> {
  let next = url;
  for (;;) {
    const res = await fetch(next, { redirect: "manual" });
    const location = res.headers.get("location");
    if (!location) throw new Error(`the sign-in stopped at HTTP ${res.status}, without a redirect`);
    if (location.startsWith(callback)) return (await signIns.finish(new URL(location).searchParams)).text;
    next = new URL(location, next).href;
  }
}

/** A whole sign-in to `server`, as `consentDirectly`. */
export async function signInDirectly(
  signIns: OAuthSignIns,
  server: string,
  callback: string,
  owner?: string,
): Promise<string> {
  return consentDirectly(signIns, (await signIns.begin(server, owner)).href, callback);
}

/** An address whose MCP endpoint demands a sign-in but whose authorization metadata is not JSON. */
export async function startBrokenAuthServer(): Promise<{ url: string; close(): Promise<void> }> {
  const app = express();
  app.get("/.well-known/*path", (_req, res) => {
    res.status(200).type("text/html").send("<html>not metadata</html>");
  });
  app.all("/mcp", (_req, res) => {
    res.status(401).set("WWW-Authenticate", 'Bearer error="invalid_token"').json({ error: "invalid_token" });
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
