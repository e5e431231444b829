import { createServer, type Server } from "node:http";
import { loadConfig } from "../../config.js";
import { SwitchboardError } from "../../core/errors.js";
import { openStore } from "../../store/index.js";
import { loadMcpConfig } from "../servers.js";
import { SIGN_IN_TTL_MS } from "./client-provider.js";
import { CALLBACK_PATH, setUpSignIns } from "./setup.js";

/**
 * `switchboard mcp login <server>`: prints the address to sign in at and waits until the
 * sign-in came back. A running bot serves the callback (and connects the server at once);
 * when none listens at the callback's address, this command serves it itself.
 */
export async function mcpLogin(
  server: string,
  out: (line: string) => void,
  env = process.env,
): Promise<void> {
  const loaded = loadConfig(env);
  const { config } = loaded;
  const servers = loadMcpConfig(loaded.mcpConfigFile, env);
  const store = await openStore(loaded.storeUrl);
  let listener: Server | undefined;
  try {
    const base = config.oauth.publicUrl ?? `http://${config.health.host}:${config.health.port}`;
    const signIns = setUpSignIns(servers, store, env, {
      redirectUrl: () => `${base.replace(/\/+$/, "")}${CALLBACK_PATH}`,
    });
    if (!signIns?.uses(server)) {
      const names = servers.filter((s) => s.transport === "http" && s.oauth).map((s) => s.name);
      throw new SwitchboardError(
        "config_invalid",
        `There is no tool server named "${server}" with "oauth" in ${loaded.mcpConfigFile ?? "mcp.json"}.${names.length ? ` Servers that sign in: ${names.join(", ")}.` : ""}`,
      );
    }
    if (signIns.perUser(server)) {
      throw new SwitchboardError(
        "config_invalid",
        `${server} signs each person in with their own account ("perUser" in ${loaded.mcpConfigFile ?? "mcp.json"}), so the bot has no sign-in of its own there: people sign in from chat, when the bot first needs it for them or with /switchboard connect ${server}.`,
      );
    }
    if (!config.oauth.publicUrl) {
      listener = await listenForCallback(config.health.host, config.health.port, (params) =>
        signIns.finish(params),
      );
    }
    const started = Date.now();
    const url = await signIns.begin(server);
    out(`Open this address in a browser to sign the bot in to ${server}:\n\n  ${url.href}\n`);
    out(
      listener
        ? "Waiting for the sign-in to come back here (10 minutes at most)…"
        : "Waiting for the sign-in to come back through the running bot (10 minutes at most)…",
    );
    while (!(await signIns.signedInSince(server, started))) {
      if (Date.now() - started > SIGN_IN_TTL_MS) {
        throw new SwitchboardError("tool_failed", "sign-in timed out", {
          userMessage: `The sign-in to ${server} did not come back within 10 minutes. Run the command again.`,
        });
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    out(`Signed in to ${server}. A running bot connects to it within seconds.`);
  } finally {
    await new Promise<void>((resolve) => (listener ? listener.close(() => resolve()) : resolve()));
    await store.close();
  }
}

/** Serves the callback where the bot's health server would, when the bot is not running; undefined when it is. */
async function listenForCallback(
  host: string,
  port: number,
  finish: (params: URLSearchParams) => Promise<{ ok: boolean; text: string }>,
): Promise<Server | undefined> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://callback");
    if (url.pathname !== CALLBACK_PATH) {
      res.writeHead(404).end();
      return;
    }
    void finish(url.searchParams).then((outcome) => {
      res.writeHead(outcome.ok ? 200 : 400, { "content-type": "text/plain; charset=utf-8" });
      res.end(`${outcome.text}\n`);
    });
  });
  return new Promise((resolve) => {
    server.once("error", () => resolve(undefined));
    server.listen(port, host, () => resolve(server));
  });
}
