#!/usr/bin/env node
import { Command } from "commander";
import { CONSOLE_KEY, runConsole } from "./adapters/console/index.js";
import { buildCore, configuredPlatforms, startApp } from "./app.js";
import { loadConfig } from "./config.js";
import { SwitchboardError } from "./core/errors.js";
import { runDoctor } from "./doctor.js";
import { log, scrub } from "./log.js";
import { mcpLogin } from "./mcp/oauth/login-command.js";

const EXIT_CONFIG = 2;

const NOTHING_TO_START = `No chat platform is configured, so there is nothing to start. Set one of:
  Slack (Socket Mode):  SLACK_BOT_TOKEN and SLACK_APP_TOKEN
  Slack (HTTP events):  SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET
  Discord:              DISCORD_TOKEN
and an LLM key: OPENAI_API_KEY (or OPENAI_BASE_URL for a local server) or ANTHROPIC_API_KEY.
To try Switchboard in this terminal first: npm run chat`;

/** Prints what went wrong and exits: 2 for configuration, 1 for everything else. */
function fail(err: unknown): never {
  if (err instanceof SwitchboardError && err.code === "config_invalid") {
    // Written past the logger, so past its scrubbing too: a setting quoted whole may hold a secret.
    process.stderr.write(`Configuration error: ${scrub(err.message)}\n`);
    process.exit(EXIT_CONFIG);
  }
  const message =
    err instanceof SwitchboardError ? err.userMessage : err instanceof Error ? err.message : String(err);
  log.error({ err }, "fatal");
  process.stderr.write(`Switchboard stopped: ${message}\n`);
  process.exit(1);
}

/**
 * Signals this close together are one: a signal sent to the process group (Ctrl+C on
 * `npm start`, or `kill -TERM -<pgid>`) reaches npm, tsx and the bot, and tsx relays its
 * copy, so the bot sees the same stop twice within milliseconds.
 */
const SAME_SIGNAL_MS = 1_000;

/**
 * SIGHUP too: closing the terminal that runs `npm start` or `npm run chat` sends it. Unheard,
 * it ends the process at once, past every "exit" listener, so the stdio MCP servers, each
 * in a session of its own that the hangup does not reach, would run on.
 */
const STOP_SIGNALS = ["SIGTERM", "SIGINT", "SIGHUP"] as const;

/** First signal: graceful stop. Another more than a second later: leave at once, with code 1. */
function onSignals(stop: () => Promise<unknown>): void {
  let firstAt: number | undefined;
  const handler = (signal: NodeJS.Signals) => {
    if (firstAt !== undefined) {
      if (performance.now() - firstAt <= SAME_SIGNAL_MS) {
        log.debug({ signal }, "repeated signal within a second: already stopping");
        return;
      }
      log.warn({ signal }, "second signal: exiting now");
      process.exit(1);
    }
    firstAt = performance.now();
    log.info({ signal }, "stopping");
    stop().then(
      () => process.exit(0),
      (err: unknown) => fail(err),
    );
  };
  for (const signal of STOP_SIGNALS) process.on(signal, handler);
}

async function start(): Promise<void> {
  const loaded = loadConfig();
  if (configuredPlatforms(loaded).length === 0) {
    process.stderr.write(`${NOTHING_TO_START}\n`);
    process.exit(1);
  }
  // Signals are handled from the first moment: a stop during start-up waits for it, then stops.
  const starting = startApp({ loaded });
  onSignals(async () => (await starting).stop());
  const app = await starting;
  log.info({ adapters: app.adapters.map((a) => a.platform) }, "Switchboard is running");
}

async function chat(): Promise<void> {
  // The terminal is the chat: only problems go to stderr unless LOG_LEVEL asks for more.
  if (!process.env.LOG_LEVEL) log.level = "warn";
  const core = await buildCore();
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      await core.dispatcher.drain(core.loaded.config.shutdown.graceMs);
      await core.close();
    })();
    return stopping;
  };
  onSignals(stop);
  await core.dispatcher.recoverInterrupted([
    {
      platform: "console",
      start: async () => undefined,
      stop: async () => undefined,
      ready: () => true,
      recover: async (key, _address, note) => {
        if (key === CONSOLE_KEY) process.stdout.write(`(The last answer here was cut off. ${note})\n`);
      },
    },
  ]);
  await runConsole({ runner: core.dispatcher });
  await stop();
  process.exit(0);
}

const program = new Command()
  .name("switchboard")
  .description("A Slack and Discord bot that answers with an LLM and uses tools from MCP servers.")
  .showHelpAfterError();

program
  .command("start")
  .description("connect to every platform whose credentials are set and answer there")
  .action(() => start().catch(fail));
program
  .command("chat")
  .description("talk to the bot in this terminal (one thread, kept across runs; /help for commands)")
  .action(() => chat().catch(fail));
program
  .command("doctor")
  .description("check the config, the LLM, every MCP server and every platform credential")
  .action(() =>
    runDoctor().then(
      (ok) => process.exit(ok ? 0 : 1),
      (err: unknown) => fail(err),
    ),
  );

const mcp = program.command("mcp").description("the MCP tool servers");
mcp
  .command("login")
  .argument("<server>", 'a server with "oauth" in mcp.json')
  .description("sign the bot in to a tool server that uses OAuth (prints the address to open)")
  .action((server: string) =>
    mcpLogin(server, (line) => process.stdout.write(`${line}\n`)).then(
      () => process.exit(0),
      (err: unknown) => fail(err),
    ),
  );

await program.parseAsync(process.argv);
