import { auth, type OAuthClientProvider, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { ContextSlot } from "../../core/async-context.js";
import { SwitchboardError } from "../../core/errors.js";
import { unreachable } from "../../core/unreachable.js";
import { safeAddress } from "../../core/url-credentials.js";
import { log, scrub } from "../../log.js";
import type { HttpServerConfig } from "../servers.js";
import { type KeptTokens, type PendingSignIn, StoredClientProvider } from "./client-provider.js";
import { type Renewal, renewingFetch } from "./renewing-fetch.js";
import type { TokenVault } from "./vault.js";

/** Tokens are refreshed this long before they expire, so no request meets an expired one. */
const REFRESH_AHEAD_MS = 60_000;
/** How long one replica may hold a token's refresh before another may try. */
const REFRESH_LOCK_MS = 30_000;

/** The owner of a server's one sign-in, shared by everyone who uses the bot. */
export const SHARED = "shared";

/** Set while a refresh runs: the SDK reads the tokens it refreshes, and must not wait for itself. */
const refreshing = new ContextSlot<boolean>("oauth refresh");

export interface SignInOptions {
  /** Where the authorization server sends the browser back: the bot's `/oauth/callback`, known once its HTTP server listens. */
  redirectUrl: () => string;
  /** Told when a server has new tokens (a sign-in finished, shared or a person's own), so it connects. */
  onSignedIn?: (server: string, owner: string) => void;
}

/** What a streamable-HTTP transport is given to sign its requests. */
export interface ConnectionAuth {
  authProvider: OAuthClientProvider;
  fetch: FetchLike;
}

/** What connections need of the sign-ins. `owner`: SHARED, or the person whose own sign-in it is. */
export interface ServerAuth {
  uses(server: string): boolean;
  /** Whether each person signs in to `server` with their own account. */
  perUser(server: string): boolean;
  signedIn(server: string, owner?: string): Promise<boolean>;
  signedInSince(server: string, ms: number, owner?: string): Promise<boolean>;
  /** Forgets tokens the server refused, unless they were saved at or after `savedBefore` (a sign-in since). */
  forget(server: string, owner: string, savedBefore: number): Promise<void>;
  connectionAuth(server: string, owner?: string): ConnectionAuth;
  begin(server: string, owner?: string): Promise<URL>;
  /** Keeps a per-user server's tool list, so that every replica offers its tools before anyone signs in there. */
  rememberTools(server: string, tools: Tool[]): Promise<void>;
  rememberedTools(server: string): Promise<Tool[] | undefined>;
}

export type CallbackOutcome = { ok: true; server: string; text: string } | { ok: false; text: string };

/**
 * OAuth sign-ins for streamable-HTTP servers, with the MCP SDK's client: discovery,
 * dynamic registration or a configured client, PKCE, refresh. Tokens live in the vault
 * (the shared store, encrypted), so any replica and the `mcp login` command see the same.
 * A token is refreshed once at a time, ahead of its expiry or after the server refused it:
 * in this process one promise, across processes a lock in the store; concurrent calls wait
 * for that refresh instead of making their own (a rotating refresh token is spent by the
 * first use).
 */
export class OAuthSignIns implements ServerAuth {
  private readonly inFlight = new Map<string, Promise<OAuthTokens | undefined>>();
  /** Refresh requests made, for tests and metrics. */
  refreshes = 0;

  constructor(
    private readonly vault: TokenVault,
    private readonly servers: ReadonlyMap<string, HttpServerConfig>,
    private readonly opts: SignInOptions,
  ) {}

  /** Whether `server` signs in with OAuth. */
  uses(server: string): boolean {
    return this.servers.get(server)?.oauth !== undefined;
  }

  perUser(server: string): boolean {
    return this.servers.get(server)?.oauth?.perUser === true;
  }

  async rememberTools(server: string, tools: Tool[]): Promise<void> {
    await this.vault.put(`${server}:catalog`, { serverUrl: this.configOf(server).url, tools });
  }

  async rememberedTools(server: string): Promise<Tool[] | undefined> {
    const kept = await this.vault.get<{ serverUrl: string; tools: Tool[] }>(`${server}:catalog`);
    return kept?.serverUrl === this.configOf(server).url ? kept.tools : undefined;
  }

  /**
   * The SDK's auth provider and fetch for a connection. The provider never starts a sign-in,
   * and is lent tokens without their refresh token: the SDK's transport, after a 401, would
   * refresh without the lock. A refused token is renewed by the fetch, through replace().
   */
  connectionAuth(server: string, owner = SHARED): ConnectionAuth {
    const provider = this.provider(server, owner, {});
    const lent = Object.create(provider, {
      tokens: { value: async () => withoutRefreshToken(await provider.tokens()) },
    }) as StoredClientProvider;
    return {
      authProvider: lent,
      fetch: renewingFetch(server, (refused) => this.renew(server, owner, refused), this.perUser(server)),
    };
  }

  /** Starts a sign-in: the URL to open in a browser. Tokens already kept stay until it finishes. */
  async begin(server: string, owner = SHARED): Promise<URL> {
    const config = this.configOf(server);
    let url: URL | undefined;
    const provider = this.provider(server, owner, {
      onAuthorizationUrl: (u) => {
        url = u;
      },
    });
    // Without kept tokens: `auth` would refresh them instead of asking the person.
    const withoutTokens = Object.create(provider, {
      tokens: { value: async () => undefined },
    }) as StoredClientProvider;
    try {
      await auth(withoutTokens, { serverUrl: config.url });
    } catch (err) {
      // A network failure names the address and its cause; the SDK's own says only "fetch failed".
      const why = unreachable(config.url, err) ?? describe(err);
      throw new SwitchboardError("tool_failed", `oauth sign-in to ${server} could not start: ${why}`, {
        userMessage: `The sign-in to ${server} could not start: ${why}. Check its address in mcp.json and that its authorization server is up.`,
      });
    }
    if (!url) {
      throw new SwitchboardError("tool_failed", `oauth sign-in to ${server}: no authorization URL`, {
        userMessage: `The sign-in to ${server} could not start: its authorization server gave no address to sign in at.`,
      });
    }
    return url;
  }

  /** The browser came back to `/oauth/callback`: exchanges the code for tokens. Never throws. */
  async finish(params: URLSearchParams): Promise<CallbackOutcome> {
    const state = params.get("state") ?? "";
    const pending = state
      ? await this.vault.take<PendingSignIn>(`flow:${state}`).catch(() => undefined)
      : undefined;
    if (!pending) {
      return {
        ok: false,
        text: "This sign-in link is unknown, already used or expired (links last 10 minutes). Start the sign-in again from the bot.",
      };
    }
    const { server, owner } = pending;
    const denied = params.get("error");
    if (denied) {
      const why = params.get("error_description") ?? denied;
      return { ok: false, text: `The sign-in to ${server} was not completed: ${scrub(why)}.` };
    }
    const code = params.get("code");
    if (!code)
      return { ok: false, text: `The sign-in to ${server} came back without a code. Start it again.` };
    try {
      const provider = this.provider(server, owner, { verifier: pending.verifier });
      await auth(provider, { serverUrl: this.configOf(server).url, authorizationCode: code });
    } catch (err) {
      log.warn({ server, why: describe(err) }, "oauth: the code could not be exchanged for tokens");
      return { ok: false, text: `The sign-in to ${server} failed: ${describe(err)}. Start it again.` };
    }
    log.info({ server, owner: owner === SHARED ? SHARED : "user" }, "oauth: signed in");
    this.opts.onSignedIn?.(server, owner);
    return {
      ok: true,
      server,
      text: `Signed in to ${server}. You can close this page and go back to the chat.`,
    };
  }

  /** Forgets the tokens and asks the authorization server to revoke them where it can (RFC 7009). */
  async revoke(server: string, owner = SHARED): Promise<boolean> {
    const key = tokensKey(server, owner);
    const kept = await this.vault.get<KeptTokens>(key);
    await this.vault.drop(key);
    if (!kept) return false;
    const provider = this.provider(server, owner, {});
    const discovery = await provider.discoveryState();
    // OpenID-style metadata leaves it out of its type, though servers may publish it.
    const metadata = discovery?.authorizationServerMetadata as { revocation_endpoint?: string } | undefined;
    const endpoint = metadata?.revocation_endpoint;
    const client = await provider.clientInformation();
    if (endpoint && client) {
      for (const token of [kept.tokens.refresh_token, kept.tokens.access_token]) {
        if (!token) continue;
        const body = new URLSearchParams({ token, client_id: client.client_id });
        if ("client_secret" in client && client.client_secret)
          body.set("client_secret", client.client_secret);
        await fetch(endpoint, { method: "POST", body }).catch((err: unknown) =>
          log.warn(
            { server, why: describe(err) },
            "oauth: the authorization server could not be told to revoke",
          ),
        );
      }
    }
    return true;
  }

  /** Whether a sign-in to `server` finished after `ms` (ms since the epoch). */
  async signedInSince(server: string, ms: number, owner = SHARED): Promise<boolean> {
    const kept = await this.vault.get<KeptTokens>(tokensKey(server, owner));
    return kept !== undefined && kept.savedAt >= ms;
  }

  async forget(server: string, owner: string, savedBefore: number): Promise<void> {
    const key = tokensKey(server, owner);
    const kept = await this.vault.get<KeptTokens>(key);
    if (kept && kept.savedAt < savedBefore) await this.vault.drop(key);
  }

  /** Whether there are tokens for `server` (signed in, maybe to be refreshed). */
  async signedIn(server: string, owner = SHARED): Promise<boolean> {
    return (await this.vault.get<KeptTokens>(tokensKey(server, owner))) !== undefined;
  }

  private provider(
    server: string,
    owner: string,
    extra: { onAuthorizationUrl?: (url: URL) => void; verifier?: string },
  ): StoredClientProvider {
    const oauth = this.configOf(server).oauth ?? {};
    const provider: StoredClientProvider = new StoredClientProvider(this.vault, {
      server,
      serverUrl: this.configOf(server).url,
      owner,
      redirectUrl: this.opts.redirectUrl(),
      ...(oauth.clientId && { clientId: oauth.clientId }),
      ...(oauth.clientSecret && { clientSecret: oauth.clientSecret }),
      ...(oauth.scope && { scope: oauth.scope }),
      ...extra,
      freshTokens: () => this.fresh(server, owner),
    });
    return provider;
  }

  /** The kept tokens, refreshed first when they expire within a minute: one refresh for all who ask. */
  private async fresh(server: string, owner: string): Promise<OAuthTokens | undefined> {
    const kept = await this.vault.get<KeptTokens>(tokensKey(server, owner));
    if (!kept || refreshing.get() || !expiresSoon(kept)) return kept?.tokens;
    return this.replace(server, owner, kept.tokens.access_token);
  }

  /** The server refused the access token `refused` (401): what to send instead. */
  private async renew(server: string, owner: string, refused: string): Promise<Renewal> {
    const tokens = await this.replace(server, owner, refused);
    if (tokens && tokens.access_token !== refused) return { token: tokens.access_token };
    return tokens?.refresh_token ? "failed" : "signed-out";
  }

  /**
   * Refreshes the tokens whose access token is `from`, unless they were replaced already
   * (here or on another replica): one refresh per token, whoever asks and why.
   */
  private async replace(server: string, owner: string, from: string): Promise<OAuthTokens | undefined> {
    const key = tokensKey(server, owner);
    const kept = await this.vault.get<KeptTokens>(key);
    if (!isReplaceable(kept, from)) return kept?.tokens;
    const flight = `${key}\n${from}`;
    let running = this.inFlight.get(flight);
    if (!running) {
      running = this.refresh(server, owner, from).finally(() => this.inFlight.delete(flight));
      this.inFlight.set(flight, running);
    }
    return running;
  }

  private async refresh(server: string, owner: string, from: string): Promise<OAuthTokens | undefined> {
    const key = tokensKey(server, owner);
    const store = this.vault.store;
    const deadline = Date.now() + REFRESH_LOCK_MS;
    for (;;) {
      const lease = await store.acquireLock(`oauth:refresh:${key}`, REFRESH_LOCK_MS);
      if (lease) {
        try {
          // Another replica may have refreshed while this one waited for the lock.
          const kept = await this.vault.get<KeptTokens>(key);
          if (!isReplaceable(kept, from)) return kept?.tokens;
          this.refreshes += 1;
          const provider = this.provider(server, owner, {});
          await refreshing.run(true, () => auth(provider, { serverUrl: this.configOf(server).url }));
          return (await this.vault.get<KeptTokens>(key))?.tokens;
        } catch (err) {
          if (!(err instanceof UnauthorizedError)) {
            log.warn({ server, why: describe(err) }, "oauth: the token could not be refreshed");
          }
          return (await this.vault.get<KeptTokens>(key))?.tokens;
        } finally {
          await store.releaseLock(lease).catch(() => {});
        }
      }
      if (Date.now() > deadline) return (await this.vault.get<KeptTokens>(key))?.tokens;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private configOf(server: string): HttpServerConfig {
    const config = this.servers.get(server);
    if (!config?.oauth) {
      throw new SwitchboardError("tool_failed", `no OAuth server named ${server}`, {
        userMessage: `There is no tool server named "${server}" that signs in with OAuth. Check its name with /tools.`,
      });
    }
    return config;
  }
}

const tokensKey = (server: string, owner: string) => `${server}:${owner}:tokens`;

/** Still the tokens with access token `from`, and a refresh token to replace them with. */
function isReplaceable(kept: KeptTokens | undefined, from: string): boolean {
  return kept?.tokens.access_token === from && kept.tokens.refresh_token !== undefined;
}

function withoutRefreshToken(tokens: OAuthTokens | undefined): OAuthTokens | undefined {
  if (!tokens?.refresh_token) return tokens;
  const { refresh_token: _, ...rest } = tokens;
  return rest;
}

function expiresSoon(kept: KeptTokens): boolean {
  const lifetime = kept.tokens.expires_in;
  return lifetime !== undefined && kept.savedAt + lifetime * 1000 - REFRESH_AHEAD_MS <= Date.now();
}

/** An OAuth or network failure in words, with addresses but never credentials. */
export function describe(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return scrub(message.replace(/https?:\/\/[^\s"')]+/g, (u) => safeAddress(u))).slice(0, 300);
}
