import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type OAuthMcpServer,
  signInDirectly,
  startOAuthMcpServer,
} from "../../test/support/oauth-mcp-server.js";
import { openStore, type Store } from "../store/index.js";
import { setUpSignIns } from "./oauth/setup.js";
import type { OAuthSignIns } from "./oauth/sign-ins.js";
import { PerUserServer } from "./per-user.js";
import type { HttpServerConfig } from "./servers.js";

const KEY = "a test key for the token vault, long enough";
const CALLBACK = "http://127.0.0.1:9/oauth/callback";
const OWNER = "slack:U1";
// Scaled down from 15 minutes and 1 minute: the call below runs for three idle times.
const IDLE = { idleMs: 1_000, sweepMs: 50 };

describe("a person's own connection left unused", () => {
  let secure: OAuthMcpServer;
  let dir: string;
  let store: Store;
  let server: PerUserServer;

  beforeEach(async () => {
    secure = await startOAuthMcpServer({ waitTool: true });
    dir = mkdtempSync(join(tmpdir(), "switchboard-per-user-idle-"));
    store = await openStore(`sqlite://${join(dir, "s.sqlite")}`);
    const config: HttpServerConfig = {
      name: "secure",
      transport: "http",
      url: secure.url,
      headers: {},
      oauth: { perUser: true },
      disabled: false,
    };
    const signIns = setUpSignIns(
      [config],
      store,
      { SWITCHBOARD_SECRET_KEY: KEY },
      {
        redirectUrl: () => CALLBACK,
      },
    ) as OAuthSignIns;
    expect(await signInDirectly(signIns, "secure", CALLBACK, OWNER)).toContain("Signed in to secure");
    const opts = {
      callTimeoutMs: 10_000,
      connectTimeoutMs: 10_000,
      maxRestarts: 1,
      clientInfo: { name: "test", version: "1" },
      onChange: () => {},
      oauth: signIns,
    };
    server = new PerUserServer(config, opts, false, IDLE);
    await server.start();
  });

  afterEach(async () => {
    await server.close();
    await store.close();
    await secure.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("stays open while a call runs on it past the idle time, and for the idle time after it ends", async () => {
    const person = { owner: OWNER, conversation: "t1" };
    const own = await server.connectionFor(person);
    if (typeof own === "string") throw new Error(own);
    const answered = await server.callOn(own, "wait", { ms: 3 * IDLE.idleMs }, person);
    if (typeof answered === "string") throw new Error(answered);
    expect(answered.answer).toEqual({ result: { content: [{ type: "text", text: "waited" }] } });

    // The call's end was its use: the connection is still the person's a third of an idle time later.
    await sleep(IDLE.idleMs / 3);
    expect(server.status().perUser).toEqual({ open: 1 });
    expect(await server.connectionFor(person)).toBe(own);

    // Then, unused, it closes.
    await sleep(IDLE.idleMs + 4 * IDLE.sweepMs);
    expect(server.status().perUser).toEqual({ open: 0 });
  });
});
