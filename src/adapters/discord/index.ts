import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { type Client, DiscordAPIError, Events, RESTJSONErrorCodes, Status } from "discord.js";
import { SwitchboardError } from "../../core/errors.js";
import type { InboundFile, StoredFile } from "../../core/inbound.js";
import type { ThreadKey } from "../../core/thread.js";
import { connectFailure } from "../../core/unreachable.js";
import { log } from "../../log.js";
import type { Adapter, AdapterDeps, Reply, ReplyAddress, ResumeFrom } from "../../runtime/contract.js";
import { MessageGoneError } from "../../runtime/message-ops.js";
import { SharedBudgets } from "../../runtime/scheduler/shared-budgets.js";
import { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { replayOrphans } from "./backlog-replay.js";
import { closedForGood, closeResumably, createClient, inviteUrl } from "./client.js";
import { onInteraction, registerCommands } from "./commands.js";
import { channelOfKey, DiscordContext } from "./context.js";
import { onMessage } from "./events.js";
import { discordFile } from "./files.js";
import { GatewaySessions } from "./gateway-sessions.js";
import { channelPlaceById } from "./places.js";
import { DiscordReply } from "./reply.js";
import { tellRestarting } from "./stopping-interactions.js";
import { refusalForOperators } from "./unwritable.js";
import { discordWritePolicy } from "./write-policy.js";

export { BOT_PERMISSIONS, inviteUrl } from "./client.js";
export { commandDefinitions } from "./commands.js";

/** How long the app waits, after its drain, for the client's deferred close. */
const CLOSE_WAIT_MS = 5_000;
/** How often the store is read for the gateway sessions of processes that stopped. */
const ORPHAN_WATCH_MS = 2_000;

/** Switchboard on Discord: mentions open threads, DMs, slash commands, streamed edits. */
export class DiscordAdapter implements Adapter {
  readonly platform = "discord" as const;
  readonly client: Client;
  private readonly ctx: DiscordContext;
  private accepting = false;
  /** Turns handed to the runner and not finished, and stopping notes not yet told: the client stays up until they are written. */
  private readonly inFlight = new Set<Promise<void>>();
  private readonly budgets: SharedBudgets;
  /** This process's gateway sessions in the store, and the stopped processes' it adopts. */
  private readonly sessions: GatewaySessions;
  /** Messages whose handler is under way, by id. */
  private readonly handling = new Set<string>();
  private orphanWatch?: NodeJS.Timeout;
  /** The client's close, once `stop` began it. */
  private closing?: Promise<void>;
  private replaying?: Promise<void>;

  constructor(private readonly deps: AdapterDeps) {
    // The bot's budgets (its 50/s and the per-route buckets) are shared by every replica through the store.
    this.budgets = new SharedBudgets(discordWritePolicy, deps.state, "discord");
    const scheduler = new WriteScheduler(this.budgets, "discord");
    const shard = deps.config.discord.shard;
    this.client = createClient({
      apiUrl: deps.secrets.discordApiUrl,
      scheduler,
      ...(shard ? { shard } : {}),
    });
    this.sessions = new GatewaySessions(deps.state);
    this.ctx = new DiscordContext(this.client, deps, scheduler, (id) => this.sessions.settled(id));
    this.client.on(Events.Raw, (packet: { t?: string; s?: number }, shard: number) =>
      this.sessions.dispatched(shard, packet),
    );
    this.client.on(Events.MessageCreate, (m) => {
      // Left pending: the session stays resumable at a point before it, for the next process to answer.
      if (!this.accepting) return;
      this.handling.add(m.id);
      this.track(
        () => onMessage(this.ctx, m),
        "message",
        () => {
          this.handling.delete(m.id);
          this.sessions.settled(m.id);
        },
      );
    });
    this.client.on(Events.ThreadCreate, (thread) =>
      this.ctx.lateThreads
        .appeared(thread)
        .catch((err: unknown) => log.warn({ err, thread: thread.id }, "a thread opened late was not tidied")),
    );
    this.client.on(Events.InteractionCreate, (i) =>
      this.track(
        () => (this.accepting ? onInteraction(this.ctx, i) : tellRestarting(i, deps.runner)),
        "interaction",
      ),
    );
    this.client.on(Events.ShardResume, (id, replayed) =>
      log.info({ shard: id, replayed }, "Discord gateway resumed"),
    );
    this.client.on(Events.ShardReconnecting, (id) => {
      // Stopping, the sockets are shut on purpose: nothing reconnects.
      if (this.accepting) log.warn({ shard: id }, "Discord gateway reconnecting");
    });
    this.client.on(Events.ShardError, (err, id) => log.warn({ err, shard: id }, "Discord gateway error"));
    this.client.on(Events.ShardDisconnect, ({ code }, id) =>
      log.error({ shard: id, code }, closedForGood(code)),
    );
    this.client.on(Events.Error, (err) => log.error({ err }, "Discord client error"));
  }

  async start(): Promise<void> {
    const token = this.deps.secrets.discordToken;
    if (!token) throw new SwitchboardError("config_invalid", "DISCORD_TOKEN is not set.");
    const ready = once(this.client, Events.ClientReady);
    await this.client.login(token).catch((err: unknown) => {
      const api = this.deps.secrets.discordApiUrl ?? "https://discord.com/api";
      const failure = connectFailure("Discord", api, err);
      throw failure ? new SwitchboardError("platform_error", failure.message, { cause: err }) : err;
    });
    await ready;
    this.accepting = true;
    this.sessions.start();
    // What a process that died received and never stored: at once (the same bot restarted), then every few seconds (a replica gone).
    this.replayOrphans();
    this.orphanWatch = setInterval(() => this.replayOrphans(), ORPHAN_WATCH_MS);
    this.orphanWatch.unref();
    const app = this.client.application;
    if (app) {
      await registerCommands(this.client, this.deps.secrets.discordGuildId).catch((err: unknown) =>
        log.error({ err }, "Discord slash commands not registered; mentions and DMs still work"),
      );
      log.info(
        { invite: inviteUrl(app.id), user: this.client.user?.tag },
        "Discord connected; invite the bot with this URL",
      );
    }
  }

  async stop(): Promise<void> {
    this.accepting = false;
    clearInterval(this.orphanWatch);
    // The gateway is left once the handlers in flight are done; REST stays up until close,
    // after the runtime's drain: turns no handler waits for (resumed by a click, taken over)
    // still write through it, and a destroyed client has no token to write with.
    this.closing ??= Promise.allSettled([...this.inFlight]).then(() => this.leaveGateway());
    if (this.inFlight.size === 0) await this.closing;
  }

  /**
   * After the runtime's drain, before the store closes and the process exits: the gateway's
   * leaving, deferred behind the handlers in flight, is waited for, so that the sessions
   * are left to the next process; then REST closes and the write budgets are given back.
   * The turns are drained by then; a close that still hangs is left behind after a few seconds.
   */
  async close(): Promise<void> {
    const closed = (this.closing ?? Promise.resolve())
      .then(() => this.closeRest())
      .catch((err: unknown) => log.warn({ err }, "the Discord client did not close cleanly"));
    const late = sleep(CLOSE_WAIT_MS, "late", { ref: false });
    if ((await Promise.race([closed, late])) === "late")
      log.warn(
        "the Discord client had not closed a few seconds after the turns were drained; exiting without it",
      );
  }

  private async leaveGateway(): Promise<void> {
    await this.replaying;
    // What came since the stop began: interactions being told to retry.
    await Promise.allSettled([...this.inFlight]);
    // What came while stopping is known only once the sockets are shut, so they are shut resumably first.
    await closeResumably(this.client);
    await this.sessions.close();
  }

  private async closeRest(): Promise<void> {
    await this.client.destroy();
    await this.budgets.close();
  }

  private replayOrphans(): void {
    const token = this.deps.secrets.discordToken;
    if (this.replaying || !this.accepting || !token) return;
    const taken = { began: (id: string) => this.handling.has(id), accepting: () => this.accepting };
    this.replaying = replayOrphans(this.client, this.sessions, token, taken)
      .catch((err: unknown) => log.warn({ err }, "could not read the gateway sessions of stopped processes"))
      .finally(() => {
        this.replaying = undefined;
      });
  }

  ready(): boolean {
    // The manager's status turns Ready once and stays so; each shard's follows its socket.
    const { shards } = this.client.ws;
    return this.client.isReady() && shards.size > 0 && shards.every((s) => s.status === Status.Ready);
  }

  /**
   * The interrupted message itself ends with the note (read back, then edited; a message
   * too full for it continues in one more). Without an address, or when the message is
   * gone, the note is posted in the thread. A thread that is gone, or closed to the bot,
   * leaves nothing to mend: it resolves. Rejects on anything else (an outage), so the turn
   * stays pending and is tried again.
   */
  async recover(key: ThreadKey, address: ReplyAddress | undefined, note: string): Promise<void> {
    try {
      await this.mend(key, address, note);
    } catch (err) {
      // Rejecting would keep the turn pending, tried again every round in every replica.
      if (gone(err)) {
        log.debug({ err, key }, "the interrupted reply's thread or message is gone; nothing to mend");
        return;
      }
      const refused = refusalForOperators(err);
      if (!refused) throw err;
      log.warn(
        { err, key, channel: channelOfKey(key) },
        `the interrupted reply was left as it was: ${refused}`,
      );
    }
  }

  private async mend(key: ThreadKey, address: ReplyAddress | undefined, note: string): Promise<void> {
    if (address && address.messages.length > 0) {
      // No typing indicator: nobody is waiting for an answer to this.
      await this.rebuilt(key, address, false).stream().fail(note);
      return;
    }
    const id = channelOfKey(key);
    if (!id || id === "dm") return;
    const channel = await this.client.channels.fetch(id).catch(() => null);
    if (channel?.isSendable()) await channel.send({ content: note, allowedMentions: { parse: [] } });
  }

  /**
   * A reply that goes on in the stored messages: its text continues the last one. Written
   * through the channel by id (an interaction's token died with its process); it renames
   * nothing, since whether the bot owns the thread is not known without a fetch.
   */
  replyFor(key: ThreadKey, address: ResumeFrom): Reply {
    return this.rebuilt(key, address, true);
  }

  fileFrom(file: StoredFile): InboundFile {
    return discordFile(file);
  }

  private rebuilt(key: ThreadKey, address: ResumeFrom, typing: boolean): DiscordReply {
    const channel = address.channel ?? channelOfKey(key);
    if (!channel) throw new Error(`Not a Discord thread key: ${key}`);
    // A key naming another id than the channel is a conversation in a channel (no thread):
    // what it adds there is noted, so that a reply to it goes on with it.
    const posted =
      channel === channelOfKey(key) ? undefined : (id: string) => this.ctx.answers.remember(id, key);
    const place = channelPlaceById(this.client, channel, posted);
    if (!typing) delete place.typing;
    return new DiscordReply(place, this.ctx.replyOptions(), address);
  }

  /** Runs `run`, the client kept up until it is done. */
  private track(run: () => Promise<void>, what: string, done?: () => void): void {
    const p = run()
      .catch((err: unknown) => log.error({ err }, `Discord ${what} not handled`))
      .finally(() => {
        this.inFlight.delete(p);
        done?.();
      });
    this.inFlight.add(p);
  }
}

/** Discord answered that the channel, thread or message is not there (deleted). */
function gone(err: unknown): boolean {
  if (err instanceof MessageGoneError) return true;
  return (
    err instanceof DiscordAPIError &&
    (err.code === RESTJSONErrorCodes.UnknownChannel || err.code === RESTJSONErrorCodes.UnknownMessage)
  );
}

export function createDiscordAdapter(deps: AdapterDeps): DiscordAdapter {
  return new DiscordAdapter(deps);
}
