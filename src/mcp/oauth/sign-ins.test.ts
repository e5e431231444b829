import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  type OAuthMcpServer,
  signInDirectly,
  startOAuthMcpServer,
} from "../../../test/support/oauth-mcp-server.js";
import { openStore, type Store } from "../../store/index.js";
import { createState } from "../../store/state.js";
import { McpHub } from "../hub.js";
import type { HttpServerConfig } from "../servers.js";
import { setUpSignIns } from "./setup.js";
import type { OAuthSignIns } from "./sign-ins.js";

const KEY = "a test key for the token vault, long enough";
// Nothing listens there: the browser is stopped at the redirect to it (see signInDirectly).
const CALLBACK = "http://127.0.0.1:9/oauth/callback";
const options = {
  callTimeoutMs: 10_000,
  connectTimeoutMs: 10_000,
  maxOutputChars: 1_000,
  blockedServers: [],
  maxRestarts: 5,
};

describe("OAuth sign-ins: a token the server refuses before its stated expiry", () => {
  let secure: OAuthMcpServer;
  let dir: string;
  let store: Store;
  let config: HttpServerConfig;
  const hubs: McpHub[] = [];

  const replica = async (): Promise<{ hub: McpHub; signIns: OAuthSignIns }> => {
    const signIns = setUpSignIns(
      [config],
      store,
      { SWITCHBOARD_SECRET_KEY: KEY },
      { redirectUrl: () => CALLBACK },
    ) as OAuthSignIns;
    const hub = await McpHub.start([config], { ...options, oauth: signIns });
    hubs.push(hub);
    return { hub, signIns };
  };

  beforeEach(async () => {
    secure = await startOAuthMcpServer();
    dir = mkdtempSync(join(tmpdir(), "switchboard-oauth-"));
    store = await openStore(`sqlite://${join(dir, "s.sqlite")}`);
    config = { name: "secure", transport: "http", url: secure.url, headers: {}, oauth: {}, disabled: false };
  });

  afterEach(async () => {
    await Promise.all(hubs.splice(0).map((h) => h.close()));
    await store.close();
    await secure.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("is refreshed once for two calls refused at once, and both go on with the new token", async () => {
    // No expires_in: the bot cannot refresh ahead, and learns of the expiry from the 401s.
    secure.auth.statesExpiry = false;
    const { hub, signIns } = await replica();
    expect(await signInDirectly(signIns, "secure", CALLBACK)).toContain("Signed in to secure");
    await hub.reconnect("secure");
    expect((await hub.call("secure__whoami", {})).text).toBe("signed in as token #0");

    secure.auth.revokeAccessTokens();
    const before = secure.auth.refreshRequests;
    const outs = await Promise.all([hub.call("secure__whoami", {}), hub.call("secure__whoami", {})]);
    expect(outs.map((o) => o.text)).toEqual(["signed in as token #2", "signed in as token #2"]);
    // A second refresh with the rotated refresh token is refused, and the SDK then signs the bot out.
    expect(secure.auth.refreshRequests - before).toBe(1);
    expect(await signIns.signedIn("secure")).toBe(true);
    expect(hub.status()[0]?.state).toBe("connected");
  });

  it("is refreshed once across replicas sharing the store", async () => {
    const one = await replica();
    expect(await signInDirectly(one.signIns, "secure", CALLBACK)).toContain("Signed in to secure");
    await one.hub.reconnect("secure");
    const two = await replica();
    expect(two.hub.status()[0]?.state).toBe("connected");

    secure.auth.revokeAccessTokens();
    const before = secure.auth.refreshRequests;
    const outs = await Promise.all([
      one.hub.call("secure__whoami", {}),
      two.hub.call("secure__whoami", {}),
      one.hub.call("secure__whoami", {}),
      two.hub.call("secure__whoami", {}),
    ]);
    expect(outs.map((o) => o.ok)).toEqual([true, true, true, true]);
    expect(new Set(outs.map((o) => o.text))).toEqual(new Set(["signed in as token #2"]));
    expect(secure.auth.refreshRequests - before).toBe(1);
  });

  it("keeps the sign-in when its authorization server fails the refresh, and renews it once it is back", async () => {
    const { hub, signIns } = await replica();
    expect(await signInDirectly(signIns, "secure", CALLBACK)).toContain("Signed in to secure");
    await hub.reconnect("secure");

    secure.auth.revokeAccessTokens();
    secure.auth.refreshFails = true;
    const before = secure.auth.refreshRequests;
    const down = await hub.call("secure__whoami", {});
    expect(down.ok).toBe(false);
    expect(down.text).toBe(
      "The tool's server refused the bot's sign-in to secure as expired, and its authorization server did not renew it just now, so the request was not sent. Try again in a moment.",
    );
    // The SDK would have tried the refresh again by itself, without the lock.
    expect(secure.auth.refreshRequests - before).toBe(1);
    expect(await signIns.signedIn("secure")).toBe(true);
    expect(hub.status()[0]?.state).toBe("connected");

    secure.auth.refreshFails = false;
    expect((await hub.call("secure__whoami", {})).text).toBe("signed in as token #2");
    expect(secure.auth.refreshRequests - before).toBe(2);
  });

  it("says so in a sentence, and lets the refused answer go, when the store fails while the token is renewed", async () => {
    const { hub, signIns } = await replica();
    expect(await signInDirectly(signIns, "secure", CALLBACK)).toContain("Signed in to secure");
    await hub.reconnect("secure");

    secure.auth.revokeAccessTokens();
    // The refused answer keeps its connection until the bot reads or cancels its body.
    secure.refusals.slow = true;
    const locks = Object.getPrototypeOf(createState(store)) as { acquireLock: () => Promise<unknown> };
    vi.spyOn(locks, "acquireLock").mockRejectedValue(new Error("connect ECONNREFUSED 127.0.0.1:6379"));
    try {
      const down = await hub.call("secure__whoami", {});
      expect(down.ok).toBe(false);
      expect(down.text).toBe(
        "The tool's server refused the bot's sign-in to secure as expired, and the bot could not renew it just now (its store did not answer), so the request was not sent. Try again in a moment.",
      );
      await vi.waitFor(() => expect(secure.refusals.open).toBe(0));
    } finally {
      vi.restoreAllMocks();
    }
  });

  it("names the person's own sign-in, not the bot's, when a per-user server's refresh fails for now", async () => {
    config = { ...config, oauth: { perUser: true } };
    const { hub, signIns } = await replica();
    const person = { owner: "slack:U1", conversation: "t1" };
    expect(await signInDirectly(signIns, "secure", CALLBACK, person.owner)).toContain("Signed in to secure");
    expect((await hub.call("secure__sign_in", {}, person)).ok).toBe(true);
    expect((await hub.call("secure__whoami", {}, person)).text).toBe("signed in as token #0");

    secure.auth.revokeAccessTokens();
    secure.auth.refreshFails = true;
    const down = await hub.call("secure__whoami", {}, person);
    expect(down.ok).toBe(false);
    expect(down.text).toBe(
      "The tool's server refused the person's own sign-in to secure as expired, and its authorization server did not renew it just now, so the request was not sent. Try again in a moment.",
    );
    expect(await signIns.signedIn("secure", person.owner)).toBe(true);
  });
});
