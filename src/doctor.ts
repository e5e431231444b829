import { providerFor } from "./agent/providers/index.js";
import { type LoadedConfig, loadConfig, type Secrets } from "./config.js";
import { SwitchboardError } from "./core/errors.js";
import { unreachable } from "./core/unreachable.js";
import {
  carriesUserInfo,
  notAUrl,
  parsesAsWritten,
  safeAddress,
  urlCredentials,
} from "./core/url-credentials.js";
import { registerSecret, scrub } from "./log.js";
import { McpHub } from "./mcp/hub.js";
import { setUpSignIns } from "./mcp/oauth/setup.js";
import { loadMcpConfig } from "./mcp/servers.js";
import { clockSkewMs, skewWarning } from "./store/clock-skew.js";
import { liveProcesses } from "./store/heartbeat.js";
import { openStore } from "./store/index.js";
import { TurnLedger } from "./store/turns.js";

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

const TIMEOUT_MS = 15_000;

/** Checks everything Switchboard depends on and prints one line per check. Resolves true when all pass. */
export async function runDoctor(
  env: NodeJS.ProcessEnv = process.env,
  out: NodeJS.WritableStream = process.stdout,
): Promise<boolean> {
  const checks: Check[] = [];
  let loaded: LoadedConfig;
  try {
    loaded = loadConfig(env);
    // Shown addresses drop user-info already; this covers errors that quote a URL whole.
    for (const url of [loaded.storeUrl, ...Object.values(loaded.secrets)])
      for (const credential of urlCredentials(typeof url === "string" ? url : undefined))
        registerSecret(credential);
    const unset = loaded.missingVars.map((v) => `\${${v}}`).join(", ");
    checks.push({
      name: "config",
      ok: unset === "",
      detail: unset
        ? `${loaded.file} uses ${unset}, not set in the environment (left empty): set it, or give a default as \${VAR:-default}`
        : (loaded.file ?? "defaults (no config file)"),
    });
  } catch (err) {
    checks.push({ name: "config", ok: false, detail: message(err) });
    print(checks, out);
    return false;
  }
  checks.push(await checkStore(loaded));
  checks.push(await checkLlm(loaded));
  checks.push(...(await checkMcp(loaded, env)));
  checks.push(...(await checkPlatforms(loaded.secrets)));
  print(checks, out);
  return checks.every((c) => c.ok);
}

async function checkStore(loaded: LoadedConfig): Promise<Check> {
  try {
    const store = await openStore(loaded.storeUrl);
    try {
      const ok = await store.ping();
      if (!ok) return { name: "store", ok, detail: "not reachable" };
      const [processes, unfinished, skewMs] = await Promise.all([
        liveProcesses(store),
        new TurnLedger(store).pending().then((turns) => turns.filter((t) => !t.waiting).length),
        clockSkewMs(store),
      ]);
      const skewed = skewWarning(skewMs);
      if (skewed) return { name: "store", ok: false, detail: `${store.kind} reachable, but: ${skewed}` };
      const running =
        processes === 0
          ? "no bot running on it"
          : `${processes} bot ${processes === 1 ? "process" : "processes"} running on it`;
      const cut = unfinished ? `, ${unfinished} unfinished ${unfinished === 1 ? "turn" : "turns"}` : "";
      return { name: "store", ok, detail: `${store.kind} reachable; ${running}${cut}` };
    } finally {
      await store.close();
    }
  } catch (err) {
    return { name: "store", ok: false, detail: message(err) };
  }
}

async function checkLlm(loaded: LoadedConfig): Promise<Check> {
  const { config, secrets } = loaded;
  const name = `llm (${config.llm.provider}, ${config.llm.model})`;
  const setting = config.llm.provider === "anthropic" ? "ANTHROPIC_BASE_URL" : "OPENAI_BASE_URL";
  const given = config.llm.provider === "anthropic" ? secrets.anthropicBaseUrl : secrets.openaiBaseUrl;
  if (given && !parsesAsWritten(given)) return { name, ok: false, detail: notAUrl(setting, given) };
  try {
    const provider = providerFor(config, secrets, config.llm.model);
    const models = await provider.listModels(AbortSignal.timeout(TIMEOUT_MS));
    const listed = models.includes(config.llm.model)
      ? "model listed"
      : "model not in the server's list (may still work)";
    return { name, ok: true, detail: `${models.length} models; ${listed}` };
  } catch (err) {
    const base =
      config.llm.provider === "anthropic"
        ? (secrets.anthropicBaseUrl ?? "https://api.anthropic.com")
        : (secrets.openaiBaseUrl ?? "https://api.openai.com/v1");
    const detail = carriesUserInfo(base)
      ? `${safeAddress(base)} is given with a user name or password in the URL, which HTTP requests cannot carry; put the key in ${config.llm.provider === "anthropic" ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY"} instead`
      : (unreachable(base, err) ?? message(err));
    return { name, ok: false, detail };
  }
}

async function checkMcp(loaded: LoadedConfig, env: NodeJS.ProcessEnv): Promise<Check[]> {
  try {
    const missing: string[] = [];
    const servers = loadMcpConfig(loaded.mcpConfigFile, env, missing);
    // A server given an empty token fails in ways that do not name the variable.
    const unset: Check[] = missing.length
      ? [
          {
            name: "mcp variables",
            ok: false,
            detail: `${loaded.mcpConfigFile} uses ${missing.map((v) => `\${${v}}`).join(", ")}, not set in the environment (left empty)`,
          },
        ]
      : [];
    if (servers.length === 0)
      return [...unset, { name: "mcp", ok: true, detail: "no servers configured (config/mcp.json)" }];
    // Servers that sign in with OAuth connect with the tokens kept in the store, as the bot would.
    const signing = servers.some((s) => s.transport === "http" && s.oauth);
    const store = signing ? await openStore(loaded.storeUrl) : undefined;
    try {
      const oauth = store ? setUpSignIns(servers, store, env, { redirectUrl: () => "" }) : undefined;
      const hub = await McpHub.start(servers, { ...loaded.config.mcp, ...(oauth && { oauth }) });
      const checks = hub.status().map((s) => {
        const detail =
          s.perUser && s.state === "connected"
            ? `each person signs in as themselves (${s.toolCount > 0 ? `${s.toolCount} tools known` : "no one has yet"})`
            : s.state === "connected"
              ? `${s.toolCount} tools`
              : `${s.state}${s.error ? `: ${s.error}` : ""}`;
        const warnings = s.warnings?.length ? `, but: ${s.warnings.join(" ")}` : "";
        return {
          name: `mcp ${s.name}`,
          ok: (s.state === "connected" || s.state === "blocked") && warnings === "",
          detail: `${detail}${warnings}`,
        };
      });
      await hub.close();
      return [...unset, ...checks];
    } finally {
      await store?.close();
    }
  } catch (err) {
    return [{ name: "mcp", ok: false, detail: message(err) }];
  }
}

async function checkPlatforms(secrets: Secrets): Promise<Check[]> {
  const checks: Check[] = [];
  if (secrets.slackBotToken || secrets.slackAppToken || secrets.slackSigningSecret)
    checks.push(await checkSlack(secrets));
  if (secrets.discordToken) {
    const base = (secrets.discordApiUrl ?? "https://discord.com/api").replace(/\/$/, "");
    checks.push(
      await probe("discord", base, "DISCORD_API_URL", async () => {
        const res = await fetch(`${base}/v10/users/@me`, {
          headers: { Authorization: `Bot ${secrets.discordToken}` },
          signal: AbortSignal.timeout(TIMEOUT_MS),
        });
        if (res.status === 401)
          throw new Error(`${safeAddress(base)} refused DISCORD_TOKEN (HTTP 401): check the token`);
        if (!res.ok) throw new Error(`${safeAddress(base)}/v10/users/@me answered HTTP ${res.status}`);
        const me = (await res.json()) as { username?: string; id?: string };
        return `bot ${me.username ?? "?"} (${me.id ?? "?"})`;
      }),
    );
  }
  if (checks.length === 0) {
    checks.push({ name: "platforms", ok: true, detail: "none configured (npm run chat works without one)" });
  }
  return checks;
}

/** Slack as `npm start` would connect to it: the bot token, then how events come in (Socket Mode's token). */
async function checkSlack(secrets: Secrets): Promise<Check> {
  const { slackBotToken, slackAppToken, slackSigningSecret } = secrets;
  const base = secrets.slackApiUrl ?? "https://slack.com/api/";
  if (!slackBotToken) {
    const given = slackAppToken ? "SLACK_APP_TOKEN" : "SLACK_SIGNING_SECRET";
    return {
      name: "slack",
      ok: false,
      detail: `${given} is set but SLACK_BOT_TOKEN is not, so npm start would not start Slack; set SLACK_BOT_TOKEN (xoxb-…)`,
    };
  }
  return probe("slack", base, "SLACK_API_URL", async () => {
    const auth = await slackCall(base, "auth.test", slackBotToken);
    if (!auth.body.ok)
      throw new Error(`${safeAddress(auth.url)} answered ${auth.body.error ?? `HTTP ${auth.status}`}`);
    const bot = `bot ${auth.body.user ?? "?"} in ${auth.body.team ?? "?"}`;
    if (slackAppToken) {
      // What Socket Mode calls first at start; the address it gives expires unused.
      const open = await slackCall(base, "apps.connections.open", slackAppToken);
      if (!open.body.ok)
        throw new Error(
          `${bot}, but Slack refused SLACK_APP_TOKEN (${open.body.error ?? `HTTP ${open.status}`}) at apps.connections.open: check the app-level token (xapp-…, with the connections:write scope)`,
        );
      return `${bot}; Socket Mode`;
    }
    if (slackSigningSecret) return `${bot}; HTTP events`;
    throw new Error(
      `${bot}, but neither SLACK_APP_TOKEN (Socket Mode) nor SLACK_SIGNING_SECRET (HTTP events) is set, so npm start would not start Slack: set one of them`,
    );
  });
}

interface SlackAnswer {
  url: string;
  status: number;
  body: { ok: boolean; error?: string; team?: string; user?: string };
}

async function slackCall(base: string, method: string, token: string): Promise<SlackAnswer> {
  const url = new URL(method, base.endsWith("/") ? base : `${base}/`).toString();
  const res = await fetch(url, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}` },
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  return { url, status: res.status, body: (await res.json()) as SlackAnswer["body"] };
}

/** Runs `fn` against the endpoint at `url`, which `setting` gives. */
async function probe(name: string, url: string, setting: string, fn: () => Promise<string>): Promise<Check> {
  if (!parsesAsWritten(url)) return { name, ok: false, detail: notAUrl(setting, url) };
  try {
    return { name, ok: true, detail: await fn() };
  } catch (err) {
    return { name, ok: false, detail: unreachable(url, err) ?? message(err) };
  }
}

function message(err: unknown): string {
  const text =
    err instanceof SwitchboardError ? err.message : err instanceof Error ? err.message : String(err);
  return scrub(text);
}

function print(checks: Check[], out: NodeJS.WritableStream): void {
  const width = Math.max(...checks.map((c) => c.name.length));
  for (const c of checks) out.write(`${c.ok ? "ok  " : "FAIL"}  ${c.name.padEnd(width)}  ${c.detail}\n`);
  const failed = checks.filter((c) => !c.ok).length;
  out.write(failed ? `\n${failed} check(s) failed.\n` : "\nAll checks passed.\n");
}
