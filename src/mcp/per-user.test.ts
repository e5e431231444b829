import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  consentDirectly,
  type OAuthMcpServer,
  signInDirectly,
  startOAuthMcpServer,
} from "../../test/support/oauth-mcp-server.js";
import { openStore, type Store } from "../store/index.js";
import { McpHub } from "./hub.js";
import { setUpSignIns } from "./oauth/setup.js";
import type { OAuthSignIns } from "./oauth/sign-ins.js";
import type { HttpServerConfig } from "./servers.js";
import type { ElicitationRequest, ToolCallOptions } from "./types.js";

const KEY = "a test key for the token vault, long enough";
// Nothing listens there: the browser is stopped at the redirect to it (see consentDirectly).
const CALLBACK = "http://127.0.0.1:9/oauth/callback";
const OWNER = "slack:U1";

describe("a per-user server whose person's sign-in stops working", () => {
  let secure: OAuthMcpServer;
  let dir: string;
  let store: Store;
  let signIns: OAuthSignIns;
  let hub: McpHub;
  let asked: ElicitationRequest[];
  /** The person: asked to sign in, they open the link and consent. */
  let person: ToolCallOptions;

  beforeEach(async () => {
    secure = await startOAuthMcpServer();
    // As a GitHub OAuth app: no refresh token, so an expired token needs a new sign-in.
    secure.auth.issuesRefreshTokens = false;
    dir = mkdtempSync(join(tmpdir(), "switchboard-per-user-"));
    store = await openStore(`sqlite://${join(dir, "s.sqlite")}`);
    const config: HttpServerConfig = {
      name: "secure",
      transport: "http",
      url: secure.url,
      headers: {},
      oauth: { perUser: true },
      disabled: false,
    };
    signIns = setUpSignIns(
      [config],
      store,
      { SWITCHBOARD_SECRET_KEY: KEY },
      { redirectUrl: () => CALLBACK },
    ) as OAuthSignIns;
    hub = await McpHub.start([config], {
      callTimeoutMs: 10_000,
      connectTimeoutMs: 10_000,
      maxOutputChars: 1_000,
      blockedServers: [],
      maxRestarts: 5,
      oauth: signIns,
    });
    asked = [];
    person = {
      owner: OWNER,
      conversation: "t1",
      elicit: async (question) => {
        asked.push(question);
        if (question.mode !== "url") return { action: "cancel" };
        await consentDirectly(signIns, question.url, CALLBACK);
        return { action: "accept" };
      },
    };
    expect(await signInDirectly(signIns, "secure", CALLBACK, OWNER)).toContain("Signed in to secure");
    expect((await hub.call("secure__sign_in", {}, person)).ok).toBe(true);
    expect((await hub.call("secure__whoami", {}, person)).text).toBe("signed in as token #0");
  });

  afterEach(async () => {
    await hub.close();
    await store.close();
    await secure.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("asks the person to sign in again, and the call goes on with their new token", async () => {
    secure.auth.revokeAccessTokens();
    const out = await hub.call("secure__whoami", {}, person);
    expect(out).toMatchObject({ ok: true, text: "signed in as token #1" });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ mode: "url", server: "secure", private: true });
  });

  it("asks once for three calls refused at once, and all three go on with the one new token", async () => {
    secure.auth.revokeAccessTokens();
    const outs = await Promise.all([0, 1, 2].map((call) => hub.call("secure__whoami", { call }, person)));
    expect(outs.map((o) => o.text)).toEqual(Array(3).fill("signed in as token #1"));
    expect(asked).toHaveLength(1);
  });

  it("asks again when their connection opens on a refused token", async () => {
    // Every person's connection opens afresh at their next call, as after 15 minutes unused.
    await hub.reconnect("secure");
    secure.auth.revokeAccessTokens();
    const out = await hub.call("secure__whoami", {}, person);
    expect(out).toMatchObject({ ok: true, text: "signed in as token #1" });
    expect(asked).toHaveLength(1);
  });

  it("says how they can sign in again when they cannot be asked here", async () => {
    secure.auth.revokeAccessTokens();
    const out = await hub.call("secure__whoami", {}, { owner: OWNER, conversation: "t1" });
    expect(out.ok).toBe(false);
    expect(out.text).toBe(
      "secure needs the person's own sign-in, and they cannot be asked here. They can sign in with /switchboard connect secure, then ask again.",
    );
    expect(await signIns.signedIn("secure", OWNER)).toBe(false);
  });
});
