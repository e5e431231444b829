import { DiscordEmulator } from "../../../test/emulators/discord/index.js";
import { adapterState } from "../../../test/support/adapter-state.js";
import { configSchema } from "../../config.js";
import type { ThreadKey } from "../../core/thread.js";
import type { Command, Inbound, Interaction, InteractionReply, TurnRunner } from "../../runtime/contract.js";
import type { StateStore } from "../../store/state.js";
import { createDiscordAdapter, type DiscordAdapter } from "./index.js";

export type Script = (inbound: Inbound) => Promise<void>;

/** A TurnRunner that dedupes like the dispatcher and lets each test script the reply. */
export class ScriptedRunner implements TurnRunner {
  readonly inbounds: Inbound[] = [];
  readonly commands: Command[] = [];
  readonly done: Inbound[] = [];
  private readonly seen = new Set<string>();
  private readonly keys = new Set<ThreadKey>();

  /** The access lists' verdict, when a test sets one (none: everyone is admitted). */
  admit?: TurnRunner["admit"];

  constructor(public script: Script = answer("Hello from the scripted runner.")) {}

  async handle(inbound: Inbound): Promise<void> {
    if (!(await this.firstSight(inbound.id))) return;
    this.inbounds.push(inbound);
    this.keys.add(inbound.key);
    await this.script(inbound);
    this.done.push(inbound);
  }

  async command(cmd: Command): Promise<string> {
    this.commands.push(cmd);
    if (cmd.name === "help") return "Mention me and I answer.";
    if (cmd.name === "title") return "New title: Renamed on request";
    return `ran ${cmd.name}${cmd.arg ? ` ${cmd.arg}` : ""} for ${cmd.key}`;
  }

  async knows(key: ThreadKey): Promise<boolean> {
    return this.keys.has(key);
  }

  readonly interactions: Interaction[] = [];
  /** What a click is answered with, when a test sets it (a form to open). */
  interactReply?: InteractionReply;

  async interact(interaction: Interaction): Promise<InteractionReply | undefined> {
    this.interactions.push(interaction);
    return this.interactReply;
  }

  async firstSight(id: string): Promise<boolean> {
    if (this.seen.has(id)) return false;
    this.seen.add(id);
    return true;
  }
}

/** Streams `text` in small deltas, then finishes. */
export function answer(text: string, opts: { title?: string; chunk?: number } = {}): Script {
  return async (inbound) => {
    const sink = inbound.reply.stream();
    const chunk = opts.chunk ?? 7;
    for (let i = 0; i < text.length; i += chunk) {
      sink.write(text.slice(i, i + chunk));
      await new Promise((r) => setTimeout(r, 1));
    }
    await sink.finish();
    if (opts.title) await inbound.reply.title(opts.title);
  };
}

export interface Harness {
  emulator: DiscordEmulator;
  runner: ScriptedRunner;
  adapter: DiscordAdapter;
  close(): Promise<void>;
}

export async function startHarness(
  opts: {
    runner?: ScriptedRunner;
    emulator?: DiscordEmulator;
    discord?: Record<string, unknown>;
    guild?: boolean;
    /** The store of another harness, as a restarted process or a second replica shares it (the test closes it). */
    state?: StateStore;
    /** The connected servers' prompts as `server/name`, for /prompt's autocomplete. */
    prompts?: () => string[];
  } = {},
): Promise<Harness> {
  const emulator = opts.emulator ?? (await DiscordEmulator.start({ rateLimits: { speed: 10 } }));
  const runner = opts.runner ?? new ScriptedRunner();
  const config = configSchema.parse({
    discord: { editIntervalMs: 250, ...opts.discord },
    models: { allowed: ["gpt-4o", "gpt-4.1-mini"] },
  });
  const own = opts.state ? undefined : await adapterState();
  const state = opts.state ?? own!.state;
  const adapter = createDiscordAdapter({
    state,
    runner,
    config,
    secrets: {
      discordToken: emulator.token,
      discordApiUrl: emulator.apiUrl,
      ...(opts.guild === false ? {} : { discordGuildId: emulator.guildId }),
    },
    models: () => [config.llm.model, ...config.models.allowed],
    ...(opts.prompts ? { prompts: opts.prompts } : {}),
  });
  await adapter.start();
  return {
    emulator,
    runner,
    adapter,
    async close() {
      await adapter.stop();
      await adapter.client.destroy();
      await own?.store.close();
      if (!opts.emulator) await emulator.stop();
    },
  };
}
