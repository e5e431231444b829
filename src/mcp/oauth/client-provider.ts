import { randomBytes } from "node:crypto";
import type { OAuthClientProvider, OAuthDiscoveryState } from "@modelcontextprotocol/sdk/client/auth.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import type { TokenVault } from "./vault.js";

/** Tokens as kept: what the server gave, and when, so that expiry is known ahead of a 401. */
export interface KeptTokens {
  tokens: OAuthTokens;
  savedAt: number;
}

/** A sign-in on its way: who started it, for which server, with which PKCE verifier. Keyed by its `state`. */
export interface PendingSignIn {
  server: string;
  owner: string;
  verifier: string;
  redirectUrl: string;
}

/** How long a sign-in link stays good. */
export const SIGN_IN_TTL_MS = 10 * 60_000;

export interface ProviderOptions {
  server: string;
  /** The server's MCP endpoint, as mcp.json gives it. */
  serverUrl: string;
  /** "shared" for the server's one sign-in; a user's id for theirs. */
  owner: string;
  redirectUrl: string;
  /** A client registered by hand (servers without dynamic client registration). */
  clientId?: string;
  clientSecret?: string;
  scope?: string;
  /** Set for a sign-in someone asked for: receives the authorization URL. Unset, a connection never starts one. */
  onAuthorizationUrl?: (url: URL) => void;
  /** Set when finishing a sign-in: the verifier its start saved. */
  verifier?: string;
  /** Reads the tokens a request should use, refreshing them first when they are about to expire. */
  freshTokens: () => Promise<OAuthTokens | undefined>;
}

/**
 * The MCP SDK's OAuth client, kept in the vault: one per server and owner. A background
 * connection never opens a sign-in (it fails with "needs sign-in"); only a sign-in someone
 * asked for receives the authorization URL.
 */
export class StoredClientProvider implements OAuthClientProvider {
  private pendingState: string | undefined;

  constructor(
    private readonly vault: TokenVault,
    private readonly opts: ProviderOptions,
  ) {}

  private key(kind: string): string {
    return `${this.opts.server}:${this.opts.owner}:${kind}`;
  }

  /** The registration is per server: every owner signs in through the same client. */
  private clientKey(): string {
    return `${this.opts.server}:client`;
  }

  get redirectUrl(): string {
    return this.opts.redirectUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "Switchboard",
      redirect_uris: [this.opts.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: this.opts.clientSecret ? "client_secret_post" : "none",
      ...(this.opts.scope && { scope: this.opts.scope }),
    };
  }

  state(): string {
    this.pendingState = randomBytes(24).toString("base64url");
    return this.pendingState;
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    if (this.opts.clientId) {
      return {
        client_id: this.opts.clientId,
        ...(this.opts.clientSecret && { client_secret: this.opts.clientSecret }),
      };
    }
    return this.vault.get<OAuthClientInformationMixed>(this.clientKey());
  }

  async saveClientInformation(info: OAuthClientInformationMixed): Promise<void> {
    if (!this.opts.clientId) await this.vault.put(this.clientKey(), info);
  }

  /** What the SDK sends: refreshed ahead of expiry, once, for everyone asking at that moment. */
  tokens(): Promise<OAuthTokens | undefined> {
    return this.opts.freshTokens();
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    const kept: KeptTokens = { tokens, savedAt: Date.now() };
    await this.vault.put(this.key("tokens"), kept);
  }

  redirectToAuthorization(url: URL): void {
    this.opts.onAuthorizationUrl?.(url);
  }

  async saveCodeVerifier(verifier: string): Promise<void> {
    // Only a sign-in someone asked for is remembered; a background attempt leaves nothing behind.
    if (!this.opts.onAuthorizationUrl || !this.pendingState) return;
    const pending: PendingSignIn = {
      server: this.opts.server,
      owner: this.opts.owner,
      verifier,
      redirectUrl: this.opts.redirectUrl,
    };
    await this.vault.put(`flow:${this.pendingState}`, pending, SIGN_IN_TTL_MS);
  }

  codeVerifier(): string {
    if (!this.opts.verifier) throw new Error("no sign-in is in progress for this server");
    return this.opts.verifier;
  }

  /** Kept with the server's address: a server moved to another address in mcp.json is discovered afresh. */
  async saveDiscoveryState(state: OAuthDiscoveryState): Promise<void> {
    await this.vault.put(`${this.opts.server}:discovery`, { serverUrl: this.opts.serverUrl, state });
  }

  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    const kept = await this.vault.get<{ serverUrl: string; state: OAuthDiscoveryState }>(
      `${this.opts.server}:discovery`,
    );
    return kept?.serverUrl === this.opts.serverUrl ? kept.state : undefined;
  }

  async invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery"): Promise<void> {
    if (scope === "all" || scope === "tokens") await this.vault.drop(this.key("tokens"));
    if ((scope === "all" || scope === "client") && !this.opts.clientId)
      await this.vault.drop(this.clientKey());
    if (scope === "all" || scope === "discovery") await this.vault.drop(`${this.opts.server}:discovery`);
  }
}
