import { setTimeout as sleep } from "node:timers/promises";
import { Agent } from "./agent/agent.js";
import { providerFor } from "./agent/providers/index.js";
import type { Provider } from "./agent/providers/provider.js";
import { tapProvider } from "./agent/providers/tap.js";
import { allowedModels, type LoadedConfig, loadConfig } from "./config.js";
import type { Platform } from "./core/thread.js";
import { urlCredentials } from "./core/url-credentials.js";
import { log, registerSecret } from "./log.js";
import { McpHub } from "./mcp/hub.js";
import { CALLBACK_PATH, setUpSignIns } from "./mcp/oauth/setup.js";
import { type OAuthSignIns, SHARED } from "./mcp/oauth/sign-ins.js";
import { loadMcpConfig, type ServerConfig } from "./mcp/servers.js";
import { type HealthServer, startHealthServer } from "./ops/health.js";
import { Metrics } from "./ops/metrics.js";
import { samplerFrom } from "./ops/trace-sampler.js";
import { tracedCall } from "./ops/traced-provider.js";
import { startTracing, tracesProtocol, tracesUrl } from "./ops/tracing.js";
import { Budgets, warnOfUnpricedModels } from "./runtime/budgets.js";
import type { Adapter, AdapterDeps } from "./runtime/contract.js";
import { Dispatcher } from "./runtime/dispatcher.js";
import type { VoteListener } from "./runtime/feedback.js";
import { Meter, type UsageListener } from "./runtime/metering.js";
import type { TurnObserver } from "./runtime/turn-log.js";
import { ApprovalBook } from "./store/approvals.js";
import { clockSkewMs, skewWarning } from "./store/clock-skew.js";
import { createDedupe } from "./store/dedupe.js";
import { FeedbackBook } from "./store/feedback.js";
import { FormBook } from "./store/forms.js";
import { openStore, type Store } from "./store/index.js";
import { createThreadLock } from "./store/locks.js";
import { SessionRepository } from "./store/sessions.js";
import { createState } from "./store/state.js";
import { StopRequests } from "./store/stop-requests.js";
import { TurnLedger } from "./store/turns.js";
import { UsageLedger } from "./store/usage.js";
import { WaitingMessages } from "./store/waiting-messages.js";

export interface CoreOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  observer?: TurnObserver;
  /** Told of every model call's tokens and cost (the Prometheus counters). */
  onUsage?: UsageListener;
  /** Told of every rating of an answer (the Prometheus counters). */
  onVote?: VoteListener;
  /** Wraps every provider (benchmarks time the model with it). */
  wrapProvider?: (p: Provider) => Provider;
  /** The configuration, when the caller has loaded it already. */
  loaded?: LoadedConfig;
}

/** Everything but the platforms: config -> store -> MCP hub -> providers -> agent -> dispatcher. */
export interface Core {
  loaded: LoadedConfig;
  store: Store;
  hub: McpHub;
  sessions: SessionRepository;
  agent: Agent;
  dispatcher: Dispatcher;
  providerFor: (model: string) => Provider;
  /** OAuth sign-ins, when a tool server uses them; `callback.base` is where browsers come back. */
  oauth?: { signIns: OAuthSignIns; callback: { base: string } };
  close(): Promise<void>;
}

export async function buildCore(opts: CoreOptions = {}): Promise<Core> {
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  const loaded = opts.loaded ?? loadConfig(env, cwd);
  const { config, secrets } = loaded;
  const { slackBotToken, slackAppToken, slackSigningSecret, discordToken, openaiApiKey, anthropicApiKey } =
    secrets;
  for (const value of [
    slackBotToken,
    slackAppToken,
    slackSigningSecret,
    discordToken,
    openaiApiKey,
    anthropicApiKey,
  ]) {
    registerSecret(value);
  }

  if (loaded.missingVars.length > 0) {
    log.warn(
      { file: loaded.file, variables: loaded.missingVars },
      "the config file uses variables that are not set; they are left empty (npm run doctor names them)",
    );
  }
  const missing: string[] = [];
  const servers = loadMcpConfig(loaded.mcpConfigFile, env, missing);
  if (missing.length > 0) {
    log.warn(
      { file: loaded.mcpConfigFile, variables: missing },
      "the MCP config uses variables that are not set; they are left empty (npm run doctor names them)",
    );
  }
  for (const server of servers) {
    if (server.warnings)
      log.warn(
        { file: loaded.mcpConfigFile, server: server.name, problems: server.warnings },
        "the MCP config has settings for this server that nothing reads",
      );
  }
  registerServerSecrets(servers);
  // A password in an endpoint's user-info never reaches a log line or an error.
  for (const url of [
    loaded.storeUrl,
    secrets.openaiBaseUrl,
    secrets.anthropicBaseUrl,
    secrets.slackApiUrl,
    secrets.discordApiUrl,
    ...servers.flatMap((s) => (s.transport === "http" ? [s.url] : [])),
  ]) {
    for (const credential of urlCredentials(url)) registerSecret(credential);
  }
  const providers = new Map<string, Provider>();
  const meter = new Meter(config.usage.prices, opts.onUsage);
  warnOfUnpricedModels(config, (model) => meter.price(model));
  const providerForModel = (model: string): Provider => {
    let p = providers.get(model);
    if (!p) {
      p = tapProvider(providerFor(config, secrets, model), tracedCall, meter.tap);
      if (opts.wrapProvider) p = opts.wrapProvider(p);
      providers.set(model, p);
    }
    return p;
  };
  // Fail on a missing key now, not at the first message; and on a trace endpoint, protocol or sampler we cannot honour.
  providerForModel(config.llm.model);
  tracesUrl(env);
  tracesProtocol(env);
  samplerFrom(env);

  const store = await openStore(loaded.storeUrl);
  warnOfClockSkew(store);
  // Sign-ins finish in the health server's /oauth/callback: its address is known once it listens.
  const callback = { base: config.oauth.publicUrl ?? `http://${config.health.host}:${config.health.port}` };
  let signedIn: (server: string, owner: string) => void = () => {};
  const oauth = setUpSignIns(servers, store, env, {
    redirectUrl: () => `${callback.base.replace(/\/+$/, "")}${CALLBACK_PATH}`,
    onSignedIn: (server, owner) => signedIn(server, owner),
  });
  const hub = await McpHub.start(servers, {
    ...config.mcp,
    traceContent: config.tracing.toolContent,
    ...(oauth && { oauth }),
  });
  // A person's own sign-in is picked up by the call waiting for it (or by their next one).
  signedIn = (server, owner) => {
    if (owner === SHARED) void hub.reconnect(server);
  };
  // Before the first span (the first turn): with no OTLP endpoint set, nothing is created.
  const tracing = startTracing(env);
  const sessions = new SessionRepository(store);
  const usage = new UsageLedger(store);
  meter.keepIn(usage);
  const agent = new Agent({ config, hub, providerFor: providerForModel, sessions });
  const ledger = new TurnLedger(store);
  const lock = createThreadLock(store);
  const dispatcher = new Dispatcher({
    meter,
    budgets: new Budgets(config, usage),
    usage,
    feedback: new FeedbackBook(store),
    ...(opts.onVote ? { onVote: opts.onVote } : {}),
    agent,
    sessions,
    ledger,
    waiting: new WaitingMessages(store, ledger),
    lock,
    // Its claims name the process as its leases do: a redelivery asks whether it still beats.
    dedupe: createDedupe(store, lock.owner),
    approvals: new ApprovalBook(store),
    forms: new FormBook(store),
    stops: new StopRequests(store),
    hub,
    config,
    observer: opts.observer,
    ...(oauth && { oauth }),
  });
  log.info(
    { store: store.kind, servers: hub.status().map((s) => `${s.name}:${s.state}`), model: config.llm.model },
    "core ready",
  );
  return {
    loaded,
    store,
    hub,
    sessions,
    agent,
    dispatcher,
    providerFor: providerForModel,
    ...(oauth && { oauth: { signIns: oauth, callback } }),
    async close() {
      await hub.close();
      await store.close();
      await tracing?.shutdown();
    },
  };
}

/** Header values and secret-looking env values of MCP servers are scrubbed from logs and errors too. */
function registerServerSecrets(servers: ServerConfig[]): void {
  for (const server of servers) {
    if (server.transport === "http") {
      for (const value of Object.values(server.headers))
        registerSecret(value.replace(/^(Bearer|Bot|Basic)\s+/i, ""));
    } else {
      for (const [name, value] of Object.entries(server.env)) {
        if (/TOKEN|KEY|SECRET|PASSWORD|AUTH|CREDENTIAL/i.test(name)) registerSecret(value);
      }
    }
  }
}

/** Platforms whose credentials are present in the environment. */
export function configuredPlatforms(loaded: LoadedConfig): Platform[] {
  const { secrets } = loaded;
  const out: Platform[] = [];
  if (secrets.discordToken) out.push("discord");
  if (secrets.slackBotToken && (secrets.slackAppToken || secrets.slackSigningSecret)) out.push("slack");
  return out;
}

export interface App extends Core {
  adapters: Adapter[];
  metrics: Metrics;
  health?: HealthServer;
  /** Resolves with the number of crash-interrupted replies ended at start-up. */
  recovered: Promise<number>;
  stop(): Promise<{ interrupted: number }>;
}

export async function startApp(opts: CoreOptions = {}): Promise<App> {
  const loaded = opts.loaded ?? loadConfig(opts.env ?? process.env, opts.cwd ?? process.cwd());
  const metrics = new Metrics(loaded.config.llm.provider);
  const core = await buildCore({
    ...opts,
    loaded,
    observer: opts.observer ?? metrics.observer(),
    onUsage: (model, usage, cost) => metrics.usage(model, usage, cost),
    onVote: (platform, vote, first) => metrics.vote(platform, vote, first),
  });
  const { config, secrets } = core.loaded;
  metrics.watchHub(core.hub);
  metrics.watchQueues(() => core.dispatcher.queueStats());
  const adapters: Adapter[] = [];
  const health = config.health.enabled
    ? await startHealthServer(config.health.host, config.health.port, {
        adapters: () => adapters,
        store: core.store,
        hub: core.hub,
        metrics,
        ...(core.oauth && { oauthCallback: (params: URLSearchParams) => core.oauth!.signIns.finish(params) }),
      })
    : undefined;
  if (core.oauth && health && !config.oauth.publicUrl) core.oauth.callback.base = health.url;
  if (core.oauth && !health) {
    log.warn(
      "OAuth sign-ins need the health server for their callback (health.enabled is false): nobody can sign in",
    );
  }
  try {
    // discord.js first: @slack/socket-mode loads undici 7, which replaces Node's global fetch
    // dispatcher and breaks @discordjs/rest multipart uploads made with the one it expects.
    for (const platform of configuredPlatforms(core.loaded)) {
      const deps: AdapterDeps = {
        state: createState(core.store),
        runner: core.dispatcher,
        config,
        secrets,
        models: () => allowedModels(config),
        prompts: () => core.hub.prompts().map((p) => `${p.server}/${p.name}`),
        promptSuggestions: () =>
          core.hub
            .prompts()
            .filter((p) => p.arguments.every((a) => !a.required))
            .map((p) => ({
              title: (p.description || p.name).slice(0, 75),
              message: `/prompt ${p.server}/${p.name}`,
            })),
        platformError: (rateLimited) => metrics.platformError(platform, rateLimited),
      };
      adapters.push(await loadAdapter(platform, deps));
    }
    await Promise.all(adapters.map((a) => a.start()));
  } catch (err) {
    await Promise.allSettled(adapters.map((a) => a.stop().then(() => a.close?.())));
    await health?.close();
    await core.close();
    throw err;
  }
  // In the background: on Redis a thread another replica is answering holds its lock until done.
  const recovering = core.dispatcher.recoverInterrupted(adapters);
  let stopped: Promise<{ interrupted: number }> | undefined;
  return {
    ...core,
    adapters,
    metrics,
    health,
    recovered: recovering,
    stop() {
      stopped ??= (async () => {
        await Promise.allSettled(adapters.map((a) => a.stop()));
        const unwatch = closeWhenUnanswered(core.store, config.shutdown.graceMs);
        const result = await core.dispatcher.drain(config.shutdown.graceMs);
        // The start-up takeovers were drained with the other turns; one stuck in a platform
        // call that ignores the abort (a read waiting out a minute-long 429) must not keep
        // the process from exiting.
        await Promise.race([recovering.catch(() => 0), sleep(AFTER_DRAIN_MS)]);
        await Promise.allSettled(adapters.map((a) => a.close?.()));
        await unwatch();
        await health?.close();
        await core.close();
        return result;
      })();
      return stopped;
    },
  };
}

/** How long a stopping process waits, after the drain, for start-up takeovers to notice it. */
const AFTER_DRAIN_MS = 1_000;

/** How often a stopping process asks whether its store still answers (see `closeWhenUnanswered`). */
const STORE_CHECK_EVERY_MS = 1_000;

/**
 * From the end of the grace until the stop is done, a server's store that does not answer
 * (cut off from this process, failing over) is closed, and every call waiting for it fails
 * at once: its client would hold them for the whole outage, the last writes of the turns
 * the drain stops and what the adapters leave to the others as they close among them.
 * Returns what ends the watch. SQLite answers or fails within its busy timeout.
 */
function closeWhenUnanswered(store: Store, fromMs: number): () => Promise<void> {
  if (store.kind === "sqlite") return async () => undefined;
  const done = new AbortController();
  const wait = (ms: number) => sleep(ms, undefined, { ref: false, signal: done.signal });
  const watching = (async () => {
    await wait(fromMs);
    while (await store.ping()) await wait(STORE_CHECK_EVERY_MS);
    if (done.signal.aborted) return;
    log.warn("the store does not answer this stopping process: closing it, the calls waiting for it fail");
    await store.close();
  })().catch((err: unknown) => {
    if (!done.signal.aborted) log.debug({ err }, "closing the store that did not answer failed");
  });
  return async () => {
    done.abort();
    await watching;
  };
}

async function loadAdapter(platform: Platform, deps: AdapterDeps): Promise<Adapter> {
  // Imported on demand so `chat` and `doctor` never load a platform SDK they do not use.
  if (platform === "discord") return (await import("./adapters/discord/index.js")).createDiscordAdapter(deps);
  if (platform === "slack") return (await import("./adapters/slack/index.js")).createSlackAdapter(deps);
  throw new Error(`No adapter for ${platform}`);
}

/** Replicas on PostgreSQL read each other's heartbeats by their own clocks: say so when this one strays. */
function warnOfClockSkew(store: Store): void {
  void clockSkewMs(store)
    .then((skewMs) => {
      const warning = skewWarning(skewMs);
      if (warning) log.warn({ skewMs }, warning);
    })
    .catch((err: unknown) => log.debug({ err }, "clock skew not measured"));
}
