import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describe, expect, it } from "vitest";
import { describeCallFailure, describeStartFailure } from "./failures.js";
import type { HttpServerConfig } from "./servers.js";

const http = (oauth?: HttpServerConfig["oauth"]): HttpServerConfig => ({
  name: "linear",
  transport: "http",
  url: "http://127.0.0.1:9/mcp",
  headers: {},
  disabled: false,
  ...(oauth && { oauth }),
});

describe("a call whose credentials the server refused (401)", () => {
  it("names whose they were and who can renew them, from the server's configuration", () => {
    const refused = (config: HttpServerConfig) =>
      describeCallFailure(new UnauthorizedError(), 1_000, false, config);
    expect(refused(http({}))).toEqual({
      kind: "unauthorized",
      text: "The tool's server needs a new sign-in: the bot's sign-in expired or was revoked. Tell the person that an admin can sign in again with the connect command.",
    });
    expect(refused(http({ perUser: true })).text).toBe(
      "The tool's server refused the person's own sign-in to linear: it expired or was revoked. They can sign in again with /switchboard connect linear, then ask again.",
    );
    expect(refused(http()).text).toBe(
      "The tool's server refused the bot's credentials (HTTP 401). Tell the person that an operator must update them in mcp.json.",
    );
  });
});

describe("a server that refuses the bot with an OAuth challenge, and mcp.json sets up no sign-in for it", () => {
  const refused = new StreamableHTTPError(401, "Error POSTing to endpoint: Unauthorized");
  const challenge =
    'Bearer error="invalid_token", resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp"';

  it('says at start-up that it asks for an OAuth sign-in, and to add "oauth": true to its entry', () => {
    const reason = describeStartFailure(refused, http(), "", challenge);
    expect(reason).toBe(
      'http://127.0.0.1:9/mcp asks for an OAuth sign-in (HTTP 401), which mcp.json does not set up for it: add "oauth": true to its entry, then sign in with `switchboard mcp login linear`.',
    );
  });

  it("says so of a call too", () => {
    expect(describeCallFailure(refused, 1_000, false, http(), challenge).text).toMatch(
      /asks for an OAuth sign-in.*"oauth": true/,
    );
  });

  it("still blames the credentials when mcp.json sends a token, or the server's challenge is not OAuth's", () => {
    const withToken = { ...http(), headers: { authorization: "Bearer abc" } };
    expect(describeStartFailure(refused, withToken, "", challenge)).toMatch(/refused the bot's credentials/);
    expect(describeStartFailure(refused, http(), "", 'Basic realm="x"')).toMatch(
      /refused the bot's credentials/,
    );
    expect(describeStartFailure(refused, http(), "")).toMatch(/refused the bot's credentials/);
  });
});
