// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests are about ${VAR} placeholders in config strings.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SwitchboardError } from "../core/errors.js";
import { scrub } from "../log.js";
import { loadMcpConfig, parseMcpConfig } from "./servers.js";

const FILE = "config/mcp.json";

function errorOf(json: unknown): SwitchboardError {
  try {
    parseMcpConfig(json, FILE, {});
  } catch (err) {
    if (err instanceof SwitchboardError) return err;
    throw err;
  }
  throw new Error("expected parseMcpConfig to throw");
}

describe("parseMcpConfig", () => {
  it("reads stdio servers with command, args, env and cwd", () => {
    const servers = parseMcpConfig(
      {
        mcpServers: {
          github: { command: "npx", args: ["-y", "server-github"], env: { A: "1" }, cwd: "/srv" },
        },
      },
      FILE,
      {},
    );
    expect(servers).toEqual([
      {
        name: "github",
        transport: "stdio",
        command: "npx",
        args: ["-y", "server-github"],
        env: { A: "1" },
        cwd: "/srv",
        disabled: false,
      },
    ]);
  });

  it("reads oauth as true, as a client's settings, or per user; anything else is named", () => {
    const servers = parseMcpConfig(
      {
        mcpServers: {
          shared: { url: "https://a.example/mcp", oauth: true },
          mine: { url: "https://b.example/mcp", oauth: { perUser: true, scope: "read" } },
        },
      },
      FILE,
      {},
    );
    expect(servers.map((s) => (s.transport === "http" ? s.oauth : undefined))).toEqual([
      {},
      { perUser: true, scope: "read" },
    ]);
    expect(
      errorOf({ mcpServers: { x: { url: "https://x.example/mcp", oauth: { perUser: "yes" } } } }).message,
    ).toContain(
      `${FILE}: mcpServers.x.oauth must be true or an object with "clientId", "clientSecret", "scope" and "perUser" (each optional)`,
    );
  });

  it("reads streamable HTTP servers from type http, type streamable-http, or a bare url", () => {
    const servers = parseMcpConfig(
      {
        mcpServers: {
          a: { type: "http", url: "https://a.example/mcp", headers: { "X-Team": "blue" } },
          b: { type: "streamable-http", url: "http://127.0.0.1:9000/mcp" },
          c: { url: "https://c.example/mcp" },
        },
      },
      FILE,
      {},
    );
    expect(servers.map((s) => [s.name, s.transport])).toEqual([
      ["a", "http"],
      ["b", "http"],
      ["c", "http"],
    ]);
    expect(servers[0]).toMatchObject({ url: "https://a.example/mcp", headers: { "X-Team": "blue" } });
  });

  it("accepts VS Code's top-level key `servers`", () => {
    expect(parseMcpConfig({ servers: { m: { command: "node" } } }, FILE, {})).toHaveLength(1);
  });

  it("keeps tool filters, a timeout and the disabled flag", () => {
    const [server] = parseMcpConfig(
      {
        mcpServers: {
          s: {
            command: "node",
            enabledTools: ["a", "b"],
            disabledTools: ["b"],
            timeoutMs: 5000,
            disabled: true,
          },
        },
      },
      FILE,
      {},
    );
    expect(server).toMatchObject({
      enabledTools: ["a", "b"],
      disabledTools: ["b"],
      timeoutMs: 5000,
      disabled: true,
    });
  });

  it("warns of a key that looks like one of its own misspelt, and not of other clients' keys", () => {
    const [typo, other] = parseMcpConfig(
      {
        mcpServers: {
          files: { command: "node", disabledtools: ["write_file"], enabledTool: ["read_file"], timeoutMS: 5 },
          cline: {
            url: "https://example.com/mcp",
            autoApprove: ["a"],
            alwaysAllow: ["b"],
            transportType: "streamableHttp",
            timeout: 30,
            description: "x",
          },
        },
      },
      FILE,
      {},
    );
    expect(typo?.warnings).toEqual([
      'mcpServers.files.disabledtools is not a setting Switchboard reads, so it is ignored: did you mean "disabledTools"?',
      'mcpServers.files.enabledTool is not a setting Switchboard reads, so it is ignored: did you mean "enabledTools"?',
      'mcpServers.files.timeoutMS is not a setting Switchboard reads, so it is ignored: did you mean "timeoutMs"?',
    ]);
    expect(typo?.disabledTools).toBeUndefined();
    expect(other?.warnings).toBeUndefined();
  });

  it("replaces ${VAR} and ${VAR:-default} in every string and reports the variables that are not set", () => {
    const missing: string[] = [];
    const servers = parseMcpConfig(
      {
        mcpServers: {
          gh: {
            command: "npx",
            env: { GITHUB_TOKEN: "${GH_TOKEN}" },
            args: ["--org", "${ORG:-acme}", "${NOPE}"],
          },
          api: { url: "https://${HOST}/mcp", headers: { Authorization: "Bearer ${API_KEY}" } },
        },
      },
      FILE,
      { GH_TOKEN: "ghp_x", HOST: "api.example", API_KEY: "k1" },
      missing,
    );
    expect(servers[0]).toMatchObject({ env: { GITHUB_TOKEN: "ghp_x" }, args: ["--org", "acme", ""] });
    expect(servers[1]).toMatchObject({
      url: "https://api.example/mcp",
      headers: { Authorization: "Bearer k1" },
    });
    expect(missing).toEqual(["NOPE"]);
  });

  it("replaces VS Code's ${env:VAR}, and names any other ${…} as not supported", () => {
    const [github] = parseMcpConfig(
      {
        servers: {
          github: {
            type: "http",
            url: "https://api.githubcopilot.com/mcp/",
            headers: { Authorization: "Bearer ${env:GITHUB_TOKEN}" },
          },
        },
      },
      FILE,
      { GITHUB_TOKEN: "ghp_x" },
    );
    expect(github).toMatchObject({ headers: { Authorization: "Bearer ghp_x" } });
    const err = errorOf({
      servers: {
        local: {
          type: "stdio",
          command: "npx",
          args: ["-y", "x", "${workspaceFolder:-.}"],
          env: { API_KEY: "${input:api-key}" },
        },
      },
    });
    expect(err.message).toBe(
      "config/mcp.json: servers.local.env.API_KEY uses ${input:api-key}, which is not supported: only ${VAR}, ${VAR:-default} and ${env:VAR} are replaced, from the environment (put the value in a variable and write ${VAR})",
    );
  });

  it("names the file, the server and the field of a bad command", () => {
    const err = errorOf({ mcpServers: { github: { command: "" } } });
    expect(err.code).toBe("config_invalid");
    expect(err.message).toBe("config/mcp.json: mcpServers.github.command must be a non-empty string");
  });

  it("reports every bad field of every server at once", () => {
    const err = errorOf({
      mcpServers: {
        a: { command: "node", args: "--flag", env: { X: 1 } },
        b: { url: "ftp://files.example", timeoutMs: -5, enabledTools: "echo" },
      },
    });
    expect(err.message.split("\n")).toEqual([
      "config/mcp.json: mcpServers.a.args must be a list of strings",
      "config/mcp.json: mcpServers.a.env.X must be a string",
      "config/mcp.json: mcpServers.b.url must be an http:// or https:// URL",
      "config/mcp.json: mcpServers.b.enabledTools must be a list of strings",
      "config/mcp.json: mcpServers.b.timeoutMs must be a positive whole number of milliseconds",
    ]);
  });

  it("explains entries that are neither stdio nor HTTP, or both, or SSE", () => {
    expect(errorOf({ mcpServers: { x: {} } }).message).toContain('mcpServers.x must have a "command"');
    expect(errorOf({ mcpServers: { x: { command: "a", url: "http://b" } } }).message).toContain("not both");
    expect(errorOf({ mcpServers: { x: { type: "sse", url: "http://b" } } }).message).toContain(
      'mcpServers.x.type is "sse", which is not supported',
    );
    expect(errorOf({ mcpServers: { x: "node server.js" } }).message).toBe(
      "config/mcp.json: mcpServers.x must be an object",
    );
  });

  it("refuses a document without an mcpServers object", () => {
    expect(errorOf([]).message).toContain("must be an object");
    expect(errorOf({ tools: {} }).message).toContain('must have an "mcpServers" object');
    expect(errorOf({ mcpServers: [] }).message).toContain("mcpServers must be an object");
  });
});

describe("loadMcpConfig", () => {
  const dir = mkdtempSync(join(tmpdir(), "switchboard-mcpconfig-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("returns no servers when no file is configured", () => {
    expect(loadMcpConfig(undefined, {})).toEqual([]);
  });

  it("scrubs from then on what its variables bring into a URL, headers, env or a secret-named argument", () => {
    const file = join(dir, "secrets.json");
    const env = {
      ZAPIER_MCP_URL: "https://mcp.zapier.com/api/mcp/s/zapkey-8f3a9c1d/mcp",
      PATH_KEY: "pathkey-51c2e7",
      GH_TOKEN: "ghtoken-4d9e1b",
      DATA_DIR: "/srv/switchboard-data",
    };
    writeFileSync(
      file,
      JSON.stringify({
        mcpServers: {
          zapier: { type: "http", url: "${ZAPIER_MCP_URL}" },
          keyed: { type: "http", url: "https://example.com/k/${PATH_KEY}/mcp" },
          gh: { command: "node", args: ["server.js", "--token", "${GH_TOKEN}", "--data", "${DATA_DIR}"] },
        },
      }),
    );
    loadMcpConfig(file, env);
    expect(
      scrub(`calling ${env.ZAPIER_MCP_URL} with ${env.PATH_KEY} and ${env.GH_TOKEN} in ${env.DATA_DIR}`),
    ).toBe("calling [redacted] with [redacted] and [redacted] in /srv/switchboard-data");
  });

  it("reads and interpolates a JSON file", () => {
    const file = join(dir, "mcp.json");
    writeFileSync(file, JSON.stringify({ mcpServers: { m: { command: "${NODE_BIN}" } } }));
    expect(loadMcpConfig(file, { NODE_BIN: "node" })).toMatchObject([{ name: "m", command: "node" }]);
  });

  it("names the file when it is not JSON or does not exist", () => {
    const file = join(dir, "broken.json");
    writeFileSync(file, "{ mcpServers: ");
    expect(() => loadMcpConfig(file, {})).toThrow(`${file}: not valid JSON`);
    expect(() => loadMcpConfig(join(dir, "absent.json"), {})).toThrow("does not exist");
  });
});
