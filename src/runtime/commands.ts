import type { Config } from "../config.js";
import { SwitchboardError } from "../core/errors.js";
import type { Provenance } from "../core/inbound.js";
import type { Platform, ThreadKey } from "../core/thread.js";
import type { OAuthSignIns } from "../mcp/oauth/sign-ins.js";
import type { ToolHub } from "../mcp/types.js";
import type { FeedbackBook } from "../store/feedback.js";
import type { UsageLedger } from "../store/usage.js";
import { expandPrompt, listPrompts } from "./prompts.js";
import { serverLine } from "./server-line.js";
import {
  compactThread,
  newConversation,
  retitleThread,
  type SessionCommandDeps,
  switchModel,
} from "./thread-commands.js";
import { everyonesUsage, ownUsage } from "./usage-report.js";

/** One use of a catalog command, from any platform. */
export interface Command {
  name: CommandName;
  key: ThreadKey;
  platform: Platform;
  user: { id: string; name?: string };
  /** Text after the subcommand (e.g. the model name for `model`). */
  arg?: string;
  /** Where the command was typed, for the access lists; absent in the terminal. */
  channel?: string;
  from?: Provenance;
  /** Slack: whether the person is in one of these user groups (approvers listed by group). */
  inGroups?(groups: string[]): Promise<boolean>;
}

/** What commands read and change: the thread's session (under its lock), the tool hub, the agent. */
export interface CommandDeps extends SessionCommandDeps {
  hub: ToolHub;
  /** Model usage as recorded (the usage command). */
  usage?: UsageLedger;
  /** Ratings of answers (shown to admins with everyone's usage). */
  feedback?: FeedbackBook;
  /** Stops the thread's answer in progress; the sentence says what happened. */
  stopTurn?(
    key: ThreadKey,
    by: { id: string; name?: string; roles?: string[] },
    inGroups?: (groups: string[]) => Promise<boolean>,
  ): Promise<string>;
  /** Sign-ins of the tool servers that use OAuth. */
  oauth?: OAuthSignIns;
}

/** Lists a platform can offer while the argument is typed (Discord autocomplete). */
export type SuggestionSource = "models" | "prompts";

export interface CommandArgument {
  /** The option's name on Discord, the placeholder in help texts ("[name]"). */
  name: string;
  /** Shown next to the option on Discord (at most 100 characters). */
  description: string;
  required: boolean;
  suggest?: SuggestionSource;
}

/**
 * One command, as every platform offers it. The platforms register from this table only:
 * Slack's `/switchboard <name>`, a Discord slash command, the console's `/name`, the help texts.
 */
/** Whether `spec` acts on one thread when given `arg` (see CommandSpec.thread). */
export function needsThread(spec: CommandSpec, arg: string | undefined): boolean {
  return spec.thread === "always" || (spec.thread === "argument" && (arg ?? "") !== "");
}

export interface CommandSpec {
  name: string;
  /**
   * One line, starting in lower case, for help texts ("• new: start a fresh…"); Discord shows
   * it capitalised as the command's description, which allows at most 100 characters.
   */
  help: string;
  argument?: CommandArgument;
  /**
   * Whether the command acts on one thread: Slack's slash command cannot be used inside a
   * thread, so it must then know the user's latest one. "argument": only when one is given.
   */
  thread: "always" | "never" | "argument";
  /** Whether it asks the model (and so is refused, as a turn is, once a daily budget is spent). */
  asksModel?: true;
  run(cmd: Command, deps: CommandDeps): Promise<string>;
}

const NO_OAUTH = "None of the tool servers signs in with OAuth (an `oauth` entry in mcp.json).";

/** Why a person may not run connect or disconnect on `server`, if they may not. */
function signInRefusal(
  cmd: Command,
  config: Config,
  oauth: OAuthSignIns | undefined,
  server: string,
  what: string,
): string | undefined {
  const admin = cmd.platform === "console" || config.access.admins.includes(cmd.user.id);
  const onlyAdmins = `Only admins can ${what} tool servers. Ask one, or have your user id added to access.admins in the config.`;
  if (!oauth) return admin ? NO_OAUTH : onlyAdmins;
  if (!server) return "Name the tool server, as /tools shows it.";
  if (!oauth.uses(server))
    return `There is no tool server named "${server}" that signs in with OAuth. /tools lists them.`;
  // A per-user server: everyone signs in and out as themselves.
  if (!oauth.perUser(server) && !admin) return onlyAdmins;
  return undefined;
}

/** Whose sign-in a connect or disconnect is: the person's own on a per-user server, else the bot's. */
function ownerFor(cmd: Command, oauth: OAuthSignIns, server: string): string | undefined {
  return oauth.perUser(server) ? `${cmd.platform}:${cmd.user.id}` : undefined;
}

export const NOTHING_TO_STOP = "There is no answer being written in this thread to stop.";

export const HELP_INTRO = "Mention me or write in a thread I am in, and I answer there using my tools.";

/** The command catalog. Adding a command is one entry here; every platform picks it up. */
const CATALOG = [
  {
    name: "new",
    help: "start a fresh conversation in this thread",
    thread: "always",
    run: newConversation,
  },
  {
    name: "stop",
    help: "stop the answer being written in this thread",
    thread: "always",
    // With the roles and groups a Stop button's click carries: approvers listed by them may stop too.
    run: (cmd, { stopTurn }) =>
      stopTurn?.(
        cmd.key,
        { ...cmd.user, ...(cmd.from?.roles ? { roles: cmd.from.roles } : {}) },
        cmd.inGroups,
      ) ?? Promise.resolve(NOTHING_TO_STOP),
  },
  {
    name: "prompts",
    help: "list the prompts the tool servers offer",
    thread: "never",
    run: async (_cmd, { hub }) => listPrompts(hub),
  },
  {
    name: "prompt",
    help: "ask with one of the tool servers' prompts: name key=value …",
    argument: {
      name: "name",
      description: "The prompt's name, then its arguments as key=value",
      required: true,
      suggest: "prompts",
    },
    thread: "never",
    // The platforms run it as a question (see TurnRunner.prompt); here only its expansion is shown.
    async run(cmd, { hub }) {
      const outcome = await expandPrompt(hub, cmd.arg ?? "");
      return "ask" in outcome ? outcome.ask : "say" in outcome ? outcome.say : "";
    },
  },
  {
    name: "tools",
    help: "list the tool servers and their status",
    thread: "never",
    async run(_cmd, { hub }) {
      const status = hub.status();
      if (status.length === 0)
        return "No tool servers are configured. Add them to config/mcp.json (see the README).";
      const down = status.some((s) => s.state === "failed" || s.state === "reconnecting");
      const hint = down ? "\nAn admin can try a server again at once with the reconnect command." : "";
      return `Tool servers:\n${status.map(serverLine).join("\n")}${hint}`;
    },
  },
  {
    name: "reconnect",
    help: "try a tool server again now, or every one that is down (admins)",
    argument: {
      name: "server",
      description: "A tool server's name; all that are down when left out",
      required: false,
    },
    thread: "never",
    async run(cmd, { hub, config }) {
      if (cmd.platform !== "console" && !config.access.admins.includes(cmd.user.id))
        return "Only admins can reconnect tool servers. Ask one, or have your user id added to access.admins in the config.";
      if (!hub.reconnect) return "This bot cannot reconnect its tool servers.";
      const status = hub.status();
      const wanted = cmd.arg?.trim();
      if (wanted && !status.some((s) => s.name === wanted))
        return `There is no tool server named "${wanted}". /tools lists them.`;
      const names = wanted
        ? [wanted]
        : status.filter((s) => s.state === "failed" || s.state === "reconnecting").map((s) => s.name);
      if (names.length === 0) return "Every tool server is connected; there is nothing to reconnect.";
      const after = await Promise.all(names.map((n) => hub.reconnect!(n)));
      return after.flatMap((s) => (s ? [serverLine(s)] : [])).join("\n");
    },
  },
  {
    name: "connect",
    help: "sign in to a tool server that uses OAuth: as yourself where each person does, else the bot (admins)",
    argument: { name: "server", description: "The tool server's name, as /tools shows it", required: true },
    thread: "never",
    async run(cmd, { config, oauth }) {
      const server = cmd.arg?.trim() ?? "";
      const refused = signInRefusal(cmd, config, oauth, server, "sign the bot in to");
      if (refused || !oauth) return refused ?? NO_OAUTH;
      const owner = ownerFor(cmd, oauth, server);
      try {
        const url = await oauth.begin(server, owner);
        const whom = owner ? "yourself, with your own account," : "the bot";
        return `Open this link to sign ${whom} in to ${server} (it works once, for 10 minutes; only you can see it):\n${url.href}`;
      } catch (err) {
        return err instanceof SwitchboardError
          ? err.userMessage
          : `The sign-in to ${server} could not start.`;
      }
    },
  },
  {
    name: "disconnect",
    help: "sign out of a tool server that uses OAuth, revoking the tokens: yours, or the bot's (admins)",
    argument: { name: "server", description: "The tool server's name, as /tools shows it", required: true },
    thread: "never",
    async run(cmd, { config, oauth, hub }) {
      const server = cmd.arg?.trim() ?? "";
      const refused = signInRefusal(cmd, config, oauth, server, "sign the bot out of");
      if (refused || !oauth) return refused ?? NO_OAUTH;
      const owner = ownerFor(cmd, oauth, server);
      if (owner) {
        const had = await oauth.revoke(server, owner);
        await hub.signedOut?.(server, owner);
        return had
          ? `Signed you out of ${server}: your tokens are revoked and forgotten. You will be asked to sign in again the next time I use it for you.`
          : `You were not signed in to ${server}; nothing changed.`;
      }
      const had = await oauth.revoke(server);
      await hub.reconnect?.(server);
      return had
        ? `Signed out of ${server}: its tokens are revoked and forgotten. Its tools are gone until someone signs in again.`
        : `The bot was not signed in to ${server}; nothing changed.`;
    },
  },
  {
    name: "model",
    help: "show the model, or switch this thread to another allowed model",
    argument: { name: "name", description: "Model id", required: false, suggest: "models" },
    thread: "argument",
    run: switchModel,
  },
  {
    name: "compact",
    help: "fold the older part of this conversation into a summary now",
    thread: "always",
    asksModel: true,
    run: compactThread,
  },
  {
    name: "summary",
    help: "show the current summary of this conversation",
    thread: "always",
    async run(cmd, { sessions }) {
      const session = await sessions.get(cmd.key);
      return session?.summary
        ? `Summary so far:\n${session.summary}`
        : "There is no summary yet: this conversation is still short.";
    },
  },
  {
    name: "title",
    help: "make a new title for this thread",
    thread: "always",
    asksModel: true,
    run: retitleThread,
  },
  {
    name: "usage",
    help: "your model usage and cost today and this week; admins: usage all for everyone's today",
    argument: {
      name: "scope",
      description: "all: everyone's usage today, by person and channel (admins)",
      required: false,
    },
    thread: "never",
    async run(cmd, { usage, config, feedback }) {
      if (!usage) return "This bot does not record usage.";
      if (cmd.arg?.trim().toLowerCase() === "all") {
        if (cmd.platform !== "console" && !config.access.admins.includes(cmd.user.id))
          return "Only admins can see everyone's usage. Ask one, or have your user id added to access.admins in the config.";
        return everyonesUsage(usage, feedback);
      }
      if (cmd.arg?.trim())
        return `I do not know the usage scope "${cmd.arg.trim()}". Leave it out for yours, or use all (admins).`;
      return ownUsage(usage, config, { platform: cmd.platform, user: cmd.user.id, key: cmd.key });
    },
  },
  {
    name: "help",
    help: "what I can do and how to ask me",
    thread: "never",
    async run(cmd, { config }) {
      return helpText(commandPrefix(cmd.platform, config));
    },
  },
] as const satisfies readonly CommandSpec[];

export type CommandName = (typeof CATALOG)[number]["name"];

/** An entry of the catalog, its name typed. */
export type CatalogCommand = CommandSpec & { name: CommandName };

/** The catalog in order, as platforms read it. */
export const COMMANDS: readonly CatalogCommand[] = CATALOG;

/** The catalog entry for a name a person typed (any case), if there is one. */
export function findCommand(name: string): CatalogCommand | undefined {
  const wanted = name.toLowerCase();
  return COMMANDS.find((c) => c.name === wanted);
}

/** How a person types a command: "/new" on Discord and the console, "/switchboard new" on Slack. */
export function commandPrefix(platform: Platform, config: Config): string {
  return platform === "slack" ? `${config.slack.slashCommand} ` : "/";
}

/** "/model [name]": the command as typed, its argument required (<…>) or optional ([…]). */
export function usageOf(spec: CommandSpec, prefix: string): string {
  const a = spec.argument;
  return `${prefix}${spec.name}${a ? (a.required ? ` <${a.name}>` : ` [${a.name}]`) : ""}`;
}

export interface HelpOptions {
  /** Platform commands that are not in the catalog (Slack's `ask`), listed first. */
  extra?: { usage: string; help: string }[];
  /** Wraps each usage in backticks (Slack shows them as code). */
  code?: boolean;
  /** A closing line about the platform. */
  note?: string;
}

/** The help text, one line per catalog command. */
export function helpText(prefix: string, opts: HelpOptions = {}): string {
  const lines = [
    ...(opts.extra ?? []),
    ...COMMANDS.map((c) => ({ usage: usageOf(c, prefix), help: c.help })),
  ].map(({ usage, help }) => `• ${opts.code ? `\`${usage}\`` : usage}: ${help}`);
  return [HELP_INTRO, "Commands:", ...lines, ...(opts.note ? [opts.note] : [])].join("\n");
}

export function runCommand(cmd: Command, deps: CommandDeps): Promise<string> {
  const spec = findCommand(cmd.name);
  if (!spec) return Promise.resolve(`I do not know the command ${cmd.name}.`);
  return spec.run(cmd, deps);
}
