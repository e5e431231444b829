import {
  createSlackAdapter,
  type SlackAdapter,
  type SlackAdapterOptions,
} from "../../../src/adapters/slack/index.js";
import { type Config, configSchema } from "../../../src/config.js";
import type { ThreadKey } from "../../../src/core/thread.js";
import type { Command, Inbound, Interaction, TurnRunner } from "../../../src/runtime/contract.js";
import type { StateStore } from "../../../src/store/state.js";
import { adapterState } from "../../support/adapter-state.js";
import { SlackEmulator, type SlackEmulatorOptions, waitFor } from "./index.js";

/** What the scripted runner does with one inbound message. */
export type Script = (inbound: Inbound) => Promise<void>;

/** Streams `text` into the reply in `pieces` deltas, with a short pause between them. */
export function streamText(text: string, pieces = 5, pauseMs = 30): Script {
  return async (inbound) => {
    const sink = inbound.reply.stream();
    const size = Math.ceil(text.length / pieces);
    for (let i = 0; i < text.length; i += size) {
      sink.write(text.slice(i, i + size));
      await new Promise((r) => setTimeout(r, pauseMs));
    }
    await sink.finish();
  };
}

/**
 * A stand-in for the dispatcher: dedupes on id and aliases like it does, remembers the
 * threads it answered, runs a script per message and records what it was given.
 */
export class ScriptedRunner implements TurnRunner {
  readonly inbounds: Inbound[] = [];
  readonly commands: Command[] = [];
  readonly histories: Awaited<ReturnType<NonNullable<Inbound["history"]>>>[] = [];
  private readonly seen = new Set<string>();
  private readonly threads = new Set<ThreadKey>();
  script: Script = streamText("Hello from Switchboard.");
  /** The access lists' verdict, when a test sets one (none: everyone is admitted). */
  admit?: TurnRunner["admit"];
  commandAnswer = (cmd: Command) => `ran ${cmd.name}${cmd.arg ? ` ${cmd.arg}` : ""}`;

  private readonly running = new Set<Promise<void>>();

  /** How many turns are running now. */
  get busy(): number {
    return this.running.size;
  }

  /** Resolves when no turn is running (the harness stops only then). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  /** Messages the adapter handed over, copies included (the runner dedupes them after). */
  handled = 0;

  handle(inbound: Inbound): Promise<void> {
    this.handled += 1;
    const turn = this.turn(inbound);
    this.running.add(turn);
    return turn.finally(() => this.running.delete(turn));
  }

  private async turn(inbound: Inbound): Promise<void> {
    const ids = [inbound.id, ...(inbound.aliases ?? [])];
    if (ids.some((id) => this.seen.has(id))) return;
    for (const id of ids) this.seen.add(id);
    inbound.onAccepted?.();
    this.inbounds.push(inbound);
    this.threads.add(inbound.key);
    if (inbound.history) this.histories.push(await inbound.history());
    await this.script(inbound);
  }

  async command(cmd: Command): Promise<string> {
    this.commands.push(cmd);
    return this.commandAnswer(cmd);
  }

  async knows(key: ThreadKey): Promise<boolean> {
    return this.threads.has(key);
  }

  readonly interactions: Interaction[] = [];

  async interact(interaction: Interaction): Promise<void> {
    this.interactions.push(interaction);
  }

  async firstSight(id: string): Promise<boolean> {
    if (this.seen.has(id)) return false;
    this.seen.add(id);
    return true;
  }
}

export interface Harness {
  emu: SlackEmulator;
  runner: ScriptedRunner;
  adapter: SlackAdapter;
  config: Config;
  /** The adapter's state (its shared write budgets' records among it). */
  state: StateStore;
  /** Every failed Web API write the adapter reported (`true`: a 429). */
  platformErrors: boolean[];
  stop(): Promise<void>;
}

export async function startHarness(
  opts: {
    emulator?: SlackEmulatorOptions;
    config?: Record<string, unknown>;
    adapter?: SlackAdapterOptions;
    http?: boolean;
  } = {},
): Promise<Harness> {
  const emu = await SlackEmulator.start(opts.emulator);
  const runner = new ScriptedRunner();
  const config = configSchema.parse({
    ...opts.config,
    slack: { updateIntervalMs: 250, ...(opts.config?.slack as Record<string, unknown> | undefined) },
  });
  // Port 0 is no valid setting for operators, but lets tests listen on a free port.
  if (opts.http) config.slack.port = 0;
  const platformErrors: boolean[] = [];
  const { state, store } = await adapterState();
  const adapter = createSlackAdapter(
    {
      state,
      runner,
      config,
      secrets: {
        slackBotToken: emu.botToken,
        slackApiUrl: emu.apiUrl,
        ...(opts.http ? { slackSigningSecret: emu.signingSecret } : { slackAppToken: emu.appToken }),
      },
      models: () => [config.llm.model],
      platformError: (rateLimited) => platformErrors.push(rateLimited),
    },
    // The SDK also drops a connection whose pong is later than this: at 100 ms a CI worker's
    // stall cut the socket under a slash command in flight, which Slack then never redelivers.
    { reconnectDelayMs: 1_000, host: "127.0.0.1", ...opts.adapter },
  );
  await adapter.start();
  if (opts.http) emu.useHttp(`http://127.0.0.1:${adapter.port()}/slack/events`);
  return {
    emu,
    runner,
    adapter,
    config,
    state,
    platformErrors,
    async stop() {
      await runner.idle();
      // The adapter takes its :eyes: away after the turn; let that land before Slack goes.
      await waitFor(() => emu.state.messages.every((m) => m.reactions.size === 0), {
        timeoutMs: 2_000,
      }).catch(() => undefined);
      await adapter.stop();
      await adapter.close?.();
      await store.close();
      await emu.stop();
    },
  };
}
