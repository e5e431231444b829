import { describe, expect, it } from "vitest";
import { connectFailure, networkReason, neverSent, unreachable } from "./unreachable.js";

/** What undici's fetch throws: "fetch failed", the socket's error as its cause. */
const fetchFailed = (code: string) =>
  new TypeError("fetch failed", { cause: Object.assign(new Error(`connect ${code} 127.0.0.1:9`), { code }) });

describe("why an endpoint could not be used", () => {
  it("names the network cause wherever it sits in the error", () => {
    expect(networkReason(fetchFailed("ECONNREFUSED"))).toBe("connection refused (nothing listens there)");
    expect(networkReason(fetchFailed("ENOTFOUND"))).toBe("the host name does not resolve (DNS)");
    expect(networkReason(fetchFailed("CERT_HAS_EXPIRED"))).toBe("TLS: the server's certificate has expired");
    // undici tries every address of a host and throws them together.
    const both = new AggregateError([Object.assign(new Error("x"), { code: "ECONNREFUSED" })], "all failed");
    expect(networkReason(new TypeError("fetch failed", { cause: both }))).toMatch(/^connection refused/);
    // The Slack SDK keeps the request's error as `original`.
    const slack = Object.assign(new Error("A request error occurred"), {
      code: "slack_webapi_request_error",
      original: Object.assign(new Error("connect"), { code: "ECONNREFUSED" }),
    });
    expect(networkReason(slack)).toMatch(/^connection refused/);
    expect(networkReason(Object.assign(new Error("t"), { name: "TimeoutError" }))).toBe("no answer in time");
    expect(networkReason(new Error("HTTP 500"))).toBeUndefined();
  });

  it("tells a request that never left from one cut after it may have reached the server", () => {
    expect(neverSent(fetchFailed("ECONNREFUSED"))).toBe(true);
    expect(neverSent(fetchFailed("ENOTFOUND"))).toBe(true);
    const connectTimedOut = Object.assign(new Error("connect ETIMEDOUT"), {
      code: "ETIMEDOUT",
      syscall: "connect",
    });
    expect(neverSent(new TypeError("fetch failed", { cause: connectTimedOut }))).toBe(true);
    // undici's answer cut mid-body, and a reset of an open connection.
    const closed = Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" });
    expect(neverSent(new TypeError("terminated", { cause: closed }))).toBe(false);
    const reset = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET", syscall: "read" });
    expect(neverSent(new TypeError("fetch failed", { cause: reset }))).toBe(false);
    expect(neverSent(new Error("HTTP 500"))).toBe(false);
  });

  it("says which address could not be reached, without its credentials", () => {
    expect(unreachable("http://u:p4ssw0rd@127.0.0.1:9/v1", fetchFailed("ECONNREFUSED"))).toBe(
      "could not reach http://127.0.0.1:9/v1: connection refused (nothing listens there)",
    );
  });

  it("tells a platform's refused token from an unreachable platform", () => {
    expect(connectFailure("Slack", "http://127.0.0.1:9/api/", fetchFailed("ECONNREFUSED"))?.message).toBe(
      "Could not connect to Slack at http://127.0.0.1:9/api/: connection refused (nothing listens there). Check SLACK_API_URL and the network.",
    );
    const refused = Object.assign(new Error("An API error occurred: invalid_auth"), {
      code: "slack_webapi_platform_error",
      data: { ok: false, error: "invalid_auth" },
    });
    expect(connectFailure("Slack", "https://slack.com/api/", refused)?.message).toMatch(
      /^Slack refused SLACK_BOT_TOKEN \(invalid_auth\)/,
    );
    expect(
      connectFailure(
        "Discord",
        "https://discord.com/api",
        Object.assign(new Error("x"), { code: "TokenInvalid" }),
      )?.message,
    ).toMatch(/^Discord refused DISCORD_TOKEN/);
    expect(connectFailure("Discord", "https://discord.com/api", new Error("odd"))).toBeUndefined();
  });
});
