import { describe, expect, it } from "vitest";
import {
  carriesUserInfo,
  parsesAsWritten,
  safeAddress,
  urlCredentials,
  withoutPassword,
} from "./url-credentials.js";

describe("a URL's credentials, kept out of logs and errors", () => {
  it("shows an address without credentials or a query", () => {
    expect(safeAddress("https://bot:s3cret@example.com:8443/v1?key=abc")).toBe("https://example.com:8443/v1");
    expect(urlCredentials("redis://:p%40ss@127.0.0.1:6379")).toEqual(["p%40ss", "p@ss"]);
    expect(urlCredentials("http://127.0.0.1")).toEqual([]);
  });

  it("hides a password the URL parser refuses, up to the last @ before the host", () => {
    // An unencoded "/" ends the authority for `new URL`, which then cannot parse the URL at all.
    const url = "redis://default:s3cr/etPW@redis:6379";
    expect(withoutPassword(url)).toBe("redis://default:***@redis:6379");
    expect(withoutPassword("postgres://app:a/b@c?d#e@db.internal:5432/app")).toBe(
      "postgres://app:***@db.internal:5432/app",
    );
    expect(withoutPassword("redis://user:pw@host:6379/0")).toBe("redis://user:***@host:6379/0");
    expect(withoutPassword("sqlite://data/switchboard.sqlite")).toBe("sqlite://data/switchboard.sqlite");
    expect(withoutPassword("not a url")).toBe("not a url");
    expect(urlCredentials(url)).toEqual(["s3cr/etPW"]);
    expect(urlCredentials("redis://default:p%40ss/x@redis:6379")).toEqual(["p%40ss/x", "p@ss/x"]);
  });

  it("hides a password the URL parser reads as a port and a path, query or fragment", () => {
    // Each parses: the user name as the host, the password's first digits as the port.
    const misread: [string, string, string, string][] = [
      [
        "redis://default:1234#s3cret@redis:6379/0",
        "redis://default:***@redis:6379/0",
        "1234#s3cret",
        "redis://redis:6379/0",
      ],
      [
        "redis://default:1234?s3cret@redis:6379",
        "redis://default:***@redis:6379",
        "1234?s3cret",
        "redis://redis:6379",
      ],
      [
        "redis://default:1234/s3cret@redis:6379",
        "redis://default:***@redis:6379",
        "1234/s3cret",
        "redis://redis:6379",
      ],
      [
        "postgres://app:5432?s3cret@db:5432/app",
        "postgres://app:***@db:5432/app",
        "5432?s3cret",
        "postgres://db:5432/app",
      ],
      // An "@" in the password, then "#" or "?": the parser takes a part of it for the password, the rest for the host.
      [
        "redis://default:p@ss#s3cret@redis:6379",
        "redis://default:***@redis:6379",
        "p@ss#s3cret",
        "redis://redis:6379",
      ],
      [
        "postgresql://app:p@ss?s3cret@db/app",
        "postgresql://app:***@db/app",
        "p@ss?s3cret",
        "postgresql://db/app",
      ],
      // A user name alone (a token): all of it goes.
      ["redis://t0k#s3cret@redis:6379", "redis://***@redis:6379", "t0k#s3cret", "redis://redis:6379"],
    ];
    for (const [url, masked, password, address] of misread) {
      expect(URL.canParse(url)).toBe(true);
      expect(parsesAsWritten(url)).toBe(false);
      expect({
        url,
        masked: withoutPassword(url),
        credentials: urlCredentials(url),
        address: safeAddress(url),
      }).toEqual({
        url,
        masked,
        credentials: [password],
        address,
      });
      expect(carriesUserInfo(url)).toBe(true);
    }
  });

  it("reads an address whose path has a segment starting with @ as the parser does", () => {
    const url = "https://server.example.ai/@owner/tools/mcp?api_key=k";
    expect(parsesAsWritten(url)).toBe(true);
    expect(safeAddress(url)).toBe("https://server.example.ai/@owner/tools/mcp");
    expect(urlCredentials(url)).toEqual([]);
    expect(withoutPassword("https://u:pw@server.example.ai/@owner/mcp")).toBe(
      "https://u:***@server.example.ai/@owner/mcp",
    );
  });

  it("reads a password holding : or @ as the parser does, which is as written", () => {
    for (const [url, password] of [
      ["redis://default:pa:ss@redis:6379/0", "pa:ss"],
      ["redis://default:p@ss@redis:6379/0", "p@ss"],
      ["rediss://:ab:12@redis:6380", "ab:12"],
    ] as const) {
      expect(parsesAsWritten(url)).toBe(true);
      expect(withoutPassword(url)).toMatch(/^rediss?:\/\/(default)?:\*\*\*@redis:63\d\d(\/0)?$/);
      expect(urlCredentials(url)).toContain(password);
    }
  });
});

describe("a secret in a URL's path (Zapier, Pipedream and others put the key there)", () => {
  it("is masked where the address is shown, and the rest of the path kept", () => {
    expect(safeAddress("https://mcp.zapier.com/api/mcp/s/OTk0YjU2ZTQtMzFhMS00ZmE3LWI2YzMtNWIyNDc2/mcp")).toBe(
      "https://mcp.zapier.com/api/mcp/s/***/mcp",
    );
    expect(safeAddress("https://remote.mcp.pipedream.net/0b6a4c1e-8d2f-4e9a-b1c3-7f5d2e8a9b40/gmail")).toBe(
      "https://remote.mcp.pipedream.net/***/gmail",
    );
    // A long key of one letter case and no digits is masked by its length alone.
    expect(safeAddress(`https://example.com/k/${"q".repeat(40)}`)).toBe("https://example.com/k/***");
  });

  it("keeps the words of an ordinary path", () => {
    for (const url of [
      "https://api.githubcopilot.com/mcp/",
      "https://server.example.ai/@owner/weather-forecasts/mcp",
      "https://mcp.linear.app/sse",
      "http://127.0.0.1:8080/v1/mcp",
    ]) {
      expect(safeAddress(url)).toBe(url);
    }
  });
});
