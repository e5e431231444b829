import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { describe, expect, it } from "vitest";
import { describeCallFailure } from "./failures.js";
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
