import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough, Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runConsole } from "../src/adapters/console/index.js";
import { commandDefinitions } from "../src/adapters/discord/commands.js";
import {
  type Harness as DiscordHarness,
  startHarness as startDiscord,
} from "../src/adapters/discord/harness.test-helper.js";
import { escapeMrkdwn } from "../src/adapters/slack/mrkdwn.js";
import { type Config, configSchema } from "../src/config.js";
import type { Platform } from "../src/core/thread.js";
import {
  COMMANDS,
  type CommandDeps,
  type CommandSpec,
  commandPrefix,
  runCommand,
  usageOf,
} from "../src/runtime/commands.js";
import type { Command, TurnRunner } from "../src/runtime/contract.js";
import {
  type Harness as SlackHarness,
  startHarness as startSlack,
} from "./emulators/slack/adapter-harness.js";
import { waitFor } from "./emulators/slack/index.js";

/**
 * Every platform offers every command of the catalog, and every help text lists it. All of
 * it is derived from `COMMANDS`: a new entry passes with no other change; a platform that
 * stops registering from the table fails.
 */

const config: Config = configSchema.parse({});

/** What a person types after the command name: a sample argument when the command takes one. */
const sampleArg = (spec: CommandSpec) => (spec.argument ? "gpt-4o" : "");

/** The help a platform shows for `help` when it asks the runtime (Discord, the console). */
function runtimeHelp(platform: Platform): Promise<string> {
  const cmd: Command = { name: "help", key: `${platform}:x`, platform, user: { id: "u" } };
  // The help command reads only the config.
  return runCommand(cmd, { config } as CommandDeps);
}

describe("the command catalog", () => {
  it("names each command once, with a one-line help Discord accepts as a description", () => {
    const names = COMMANDS.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    for (const c of COMMANDS) {
      expect(c.name).toMatch(/^[a-z][a-z0-9_-]{0,31}$/);
      expect(c.help).not.toContain("\n");
      expect(c.help.length).toBeLessThanOrEqual(100);
    }
  });
});

describe("Slack offers every catalog command", () => {
  let h: SlackHarness;
  let help = "";
  beforeAll(async () => {
    h = await startSlack();
    // Commands for a thread act on the user's latest thread with the bot.
    const m = h.emu.mention("C1", "U_ALICE", "hello");
    await waitFor(() => h.emu.botReplies("C1", m.ts).length === 1);
    h.emu.slash("/switchboard", "help", "U_ALICE", "C1");
    help = (await waitFor(() => h.emu.state.ephemerals.at(-1))).text;
  });
  afterAll(() => h?.stop());

  // The app manifest is pasted into Slack by hand, so it cannot be generated; it is checked.
  const manifest = readFileSync(join(import.meta.dirname, "../config/slack-manifest.yaml"), "utf8");
  const hint = /usage_hint:\s*"([^"]*)"/.exec(manifest)?.[1] ?? "";

  for (const spec of COMMANDS) {
    it(`runs /switchboard ${spec.name}`, async () => {
      const before = h.emu.state.ephemerals.length;
      h.emu.slash("/switchboard", `${spec.name} ${sampleArg(spec)}`.trim(), "U_ALICE", "C1");
      const answer = await waitFor(() => h.emu.state.ephemerals[before]);
      expect(answer.text).not.toContain("I do not know");
      // `help` is answered by Slack's own usage, which also lists `ask`.
      if (spec.name === "help") expect(answer.text).toBe(help);
      // Under load an earlier command's late answer can be the one at `before`: wait for this one's.
      else await waitFor(() => h.runner.commands.some((c) => c.name === spec.name));
    });

    it(`lists ${spec.name} in its help and in the app manifest's usage hint`, () => {
      expect(help).toContain(escapeMrkdwn(`\`${usageOf(spec, "/switchboard ")}\`: ${spec.help}`));
      expect(hint.split(" | ")).toContain(usageOf(spec, ""));
    });
  }
});

describe("Discord offers every catalog command", () => {
  let h: DiscordHarness;
  let help = "";
  /** The thread the bot opened for a mention: thread commands act on a conversation. */
  let thread = "";
  beforeAll(async () => {
    h = await startDiscord();
    help = await runtimeHelp("discord");
    thread = h.emulator.userMessage(h.emulator.state.general, "a thread for commands", {
      mentionsBot: true,
    }).id;
    await waitFor(() => h.runner.done.length === 1);
  });
  afterAll(() => h?.close());

  for (const spec of COMMANDS) {
    it(`registers /${spec.name} with its argument as an option`, () => {
      const registered = h.emulator.state.commands.guild.get(h.emulator.guildId) ?? [];
      expect(registered.map((c) => c.name)).toContain(spec.name);
      const def = commandDefinitions().find((d) => d.name === spec.name);
      expect(def?.description.toLowerCase()).toBe(spec.help.toLowerCase());
      const arg = spec.argument;
      expect(def?.options ?? []).toEqual(
        arg
          ? [
              expect.objectContaining({
                name: arg.name,
                description: arg.description,
                type: 3,
                required: arg.required,
                autocomplete: arg.suggest !== undefined,
              }),
            ]
          : [],
      );
    });

    it(`runs /${spec.name}`, async () => {
      const s = h.emulator.state;
      const options = spec.argument ? { [spec.argument.name]: sampleArg(spec) } : {};
      const rec = h.emulator.slash(spec.name, options, thread, s.alice.id);
      await waitFor(() => s.findMessage(rec.originalId ?? "")?.content);
      expect(h.runner.commands.at(-1)).toMatchObject({
        name: spec.name,
        ...(spec.argument ? { arg: sampleArg(spec) } : {}),
      });
    });

    it(`lists /${spec.name} in its help`, () => {
      expect(help).toContain(`• ${usageOf(spec, "/")}: ${spec.help}`);
    });
  }
});

describe("the console offers every catalog command", () => {
  const commands: Command[] = [];
  let output = "";
  let help = "";
  beforeAll(async () => {
    const runner: TurnRunner = {
      handle: async () => undefined,
      command: async (cmd) => {
        commands.push(cmd);
        return `ran ${cmd.name}`;
      },
      knows: async () => false,
      firstSight: async () => true,
      interact: async () => undefined,
    };
    const lines = [...COMMANDS.map((c) => `/${c.name} ${sampleArg(c)}`.trim()), "/frobnicate"];
    const out = new PassThrough();
    out.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    await runConsole({
      runner,
      input: Readable.from(lines.map((l) => `${l}\n`)),
      out,
      err: new PassThrough(),
    });
    help = await runtimeHelp("console");
  });

  for (const spec of COMMANDS) {
    it(`runs /${spec.name}`, () => {
      expect(commands.find((c) => c.name === spec.name)).toMatchObject({
        platform: "console",
        arg: spec.argument ? sampleArg(spec) : undefined,
      });
    });

    it(`lists /${spec.name} in its help and after an unknown command`, () => {
      const line = `• ${usageOf(spec, commandPrefix("console", config))}: ${spec.help}`;
      expect(help).toContain(line);
      expect(output.slice(output.indexOf("Unknown command /frobnicate"))).toContain(line);
    });
  }
});
