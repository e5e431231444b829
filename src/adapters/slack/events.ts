import type { App } from "@slack/bolt";
import type { WebClient } from "@slack/web-api";
import type { Config } from "../../config.js";
import { nextSlice } from "../../core/loop-slices.js";
import type { ThreadKey } from "../../core/thread.js";
import { encodeThread } from "../../core/thread.js";
import { log } from "../../log.js";
import { REFUSED_NOTE } from "../../runtime/access.js";
import type { Inbound, TurnRunner } from "../../runtime/contract.js";
import { NOTHING_ASKED } from "../../runtime/intake.js";
import type { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import type { StateStore } from "../../store/state.js";
import { type AgentSessions, sessionStopped } from "./agent-sessions.js";
import type { Eyes } from "./eyes.js";
import { messageFiles, type SlackFile } from "./files.js";
import { HeldAcks } from "./held-acks.js";
import { MessageCopies } from "./message-copies.js";
import { messageFileList, readableText, type SlackMessageParts } from "./message-text.js";
import { UserNames } from "./names.js";
import { type ReplyDeps, type SlackPlace, SlackReply } from "./reply.js";
import type { StatusClears } from "./status-clears.js";
import { offerPrompts } from "./suggested-prompts.js";
import { threadHistory } from "./thread-history.js";
import { UserGroups } from "./user-groups.js";

export { HISTORY_PAGE_SIZE, HISTORY_PAGES } from "./thread-history.js";

export interface SlackIdentity {
  teamId: string;
  botUserId: string;
  botId: string;
}

/** The fields of a `message` / `app_mention` event that decide what to do with it. */
export interface SlackMessageEvent extends SlackMessageParts {
  type: string;
  subtype?: string;
  channel: string;
  channel_type?: string;
  user?: string;
  bot_id?: string;
  ts: string;
  thread_ts?: string;
  team?: string;
}

export type Route =
  | { kind: "ignore"; why: string }
  | { kind: "mention" | "dm" | "follow"; threadRoot: string; midThread: boolean };

/** Subtypes that are a person saying something; every other subtype is an edit, a join, a bot... */
const SPOKEN_SUBTYPES = new Set([undefined, "file_share", "thread_broadcast"]);

/**
 * What a message means for the bot, before any lookup: ignored (own messages, edits,
 * deletions, other bots unless allowed), a mention, a DM, or a candidate follow-up in a
 * thread (answered only if Switchboard already has a session there).
 */
export function route(e: SlackMessageEvent, me: SlackIdentity, opts: { allowBots: boolean }): Route {
  // Another bot's message (a webhook, a legacy integration) is spoken too when bots are let in.
  const spoken = SPOKEN_SUBTYPES.has(e.subtype) || (e.subtype === "bot_message" && opts.allowBots);
  if (e.type === "message" && !spoken) return { kind: "ignore", why: `subtype ${e.subtype}` };
  if (e.user === me.botUserId || (e.bot_id && e.bot_id === me.botId))
    return { kind: "ignore", why: "own message" };
  if ((e.bot_id || e.subtype === "bot_message") && !opts.allowBots)
    return { kind: "ignore", why: "another bot" };
  if (!e.user && !e.bot_id) return { kind: "ignore", why: "no author" };
  const threadRoot = e.thread_ts ?? e.ts;
  const midThread = e.thread_ts !== undefined && e.thread_ts !== e.ts;
  if (e.type === "app_mention") return { kind: "mention", threadRoot, midThread };
  if (e.channel_type === "im" || e.channel.startsWith("D")) return { kind: "dm", threadRoot, midThread };
  if ((e.text ?? "").includes(`<@${me.botUserId}>`)) return { kind: "mention", threadRoot, midThread };
  if (midThread) return { kind: "follow", threadRoot, midThread };
  return { kind: "ignore", why: "channel message without a mention" };
}

export function threadKey(team: string, channel: string, threadRoot: string): ThreadKey {
  return encodeThread({ platform: "slack", team, channel, thread: threadRoot });
}

export interface EventDeps {
  runner: TurnRunner;
  config: Config;
  token: string;
  identity: () => SlackIdentity;
  writes: WebClient;
  reads: WebClient;
  /** The workspace's write scheduler (the one `writes` goes through). */
  scheduler: WriteScheduler;
  /** Native streaming settings, or undefined for post + update. */
  native?: ReplyDeps["native"];
  /** Puts the :eyes: on messages taken, and takes it away once they are answered. */
  eyes: Eyes;
  /** Assistant threads and each user's last thread, kept across restarts and replicas. */
  state: StateStore;
  /** The tool servers' prompts for the assistant pane (see AdapterDeps.promptSuggestions). */
  promptSuggestions?: () => Array<{ title: string; message: string }>;
  /** The workspace's agent sessions (see agent-sessions.ts). */
  sessions?: AgentSessions;
  /** What took the workspace's thread statuses away (see status-clears.ts). */
  clears?: StatusClears;
  groups?: UserGroups;
}

/** How long Slack's per-thread facts are kept: an assistant thread or a user's last thread a month on. */
const REMEMBER_MS = 30 * 24 * 60 * 60 * 1000;
const assistantKey = (key: ThreadKey) => `slack:assistant:${key}`;
const lastThreadKey = (channel: string, user: string) => `slack:last-thread:${channel}:${user}`;

export interface TurnInput {
  eventId: string;
  team: string;
  key: ThreadKey;
  channel: string;
  /** The message being answered. */
  ts: string;
  threadRoot: string;
  author: string;
  text: string;
  files?: SlackFile[];
  /** Seed a new session with the thread's earlier messages. */
  withHistory: boolean;
  /** A mention with no text, no files and no thread before it: nothing to ask the model. */
  bareMention?: boolean;
  /** A write that must land before the runner has the message (see `receive`). */
  before?: Promise<unknown>;
  /** Slack delivered it before and had no acknowledgement (see `Inbound.redelivered`). */
  redelivered?: boolean;
}

export class SlackEvents {
  /**
   * Messages Slack delivered (and Bolt acknowledged) that are not yet with the runner: a
   * stopping adapter waits for them, so none is lost between the ack and the runner.
   */
  private readonly arriving = new Set<Promise<void>>();

  private readonly names: UserNames;
  private readonly groups: UserGroups;
  private readonly copies = new MessageCopies();
  /** Message events' acknowledgements, held until their message is stored. */
  readonly acks = new HeldAcks();

  constructor(private readonly deps: EventDeps) {
    this.names = new UserNames(deps.reads);
    this.groups = deps.groups ?? new UserGroups(deps.reads);
  }

  register(app: App): void {
    this.acks.install(app);
    app.event("app_mention", async ({ event, body, context }) => {
      await this.onMessage(event as unknown as SlackMessageEvent, body.event_id, (context.retryNum ?? 0) > 0);
    });
    app.event("message", async ({ event, body, context }) => {
      await this.onMessage(event as unknown as SlackMessageEvent, body.event_id, (context.retryNum ?? 0) > 0);
    });
    app.event("assistant_thread_started", async ({ event, body }) => {
      const t = event.assistant_thread;
      await this.onAssistantThread(t.channel_id, t.thread_ts, body.event_id);
    });
    app.event("assistant_thread_context_changed", async () => undefined);
    // An agent app's Messages tab opened: its DM's suggested prompts (see offerPrompts).
    app.event("app_home_opened", async ({ event, body }) => {
      if (event.tab !== "messages" || !(await this.deps.runner.firstSight(body.event_id))) return;
      await offerPrompts(this.deps, event.channel);
    });
    // Slack's stop button on an agent session: the same Stop as ours, for the same people.
    app.event("agent_session_stopped", async ({ event, body }) => {
      await this.onSessionStopped(event.channel, event.thread_ts, event.user, body.event_id);
    });
  }

  private async onSessionStopped(channel: string, threadTs: string, user: string, eventId: string) {
    if (!(await this.deps.runner.firstSight(eventId).catch(() => true))) return;
    const key = threadKey(this.deps.identity().teamId, channel, threadTs);
    const name = await this.names.of(user);
    await sessionStopped({ ...this.deps, groups: this.groups }, key, { channel, threadTs, user }, name);
  }

  private async onAssistantThread(channel: string, threadTs: string, eventId: string): Promise<void> {
    const me = this.deps.identity();
    await this.deps.state
      .set(assistantKey(threadKey(me.teamId, channel, threadTs)), true, REMEMBER_MS)
      .catch((err: unknown) => log.warn({ err }, "assistant thread not remembered"));
    if (!(await this.deps.runner.firstSight(eventId))) return;
    await offerPrompts(this.deps, channel, threadTs);
  }

  async onMessage(e: SlackMessageEvent, eventId: string, redelivered = false): Promise<void> {
    // From here a stopping adapter waits for it (its acknowledgement may have gone: see `acks`).
    const handed = this.arrive();
    try {
      await this.receive(e, eventId, handed, redelivered);
    } finally {
      handed();
    }
  }

  private async receive(
    e: SlackMessageEvent,
    eventId: string,
    handed: () => void,
    redelivered: boolean,
  ): Promise<void> {
    const me = this.deps.identity();
    const r = route(e, me, { allowBots: this.deps.config.slack.allowBots });
    if (r.kind === "ignore") {
      log.trace({ why: r.why, channel: e.channel, ts: e.ts }, "slack event ignored");
      return;
    }
    // The author's workspace: another organization's in a Slack Connect channel.
    const team = e.team ?? me.teamId;
    // The thread is keyed by this workspace: every author's message of it is one conversation.
    const key = threadKey(me.teamId, e.channel, r.threadRoot);
    if (
      r.kind === "follow" &&
      // The opening message as its copies are deduplicated (see `answer`'s aliases).
      !(
        this.deps.config.slack.followThreads &&
        (await this.deps.runner.knows(key, `${e.channel}:${r.threadRoot}`))
      )
    ) {
      return;
    }
    // A copy of a message this process already took (app_mention and message): nothing to do.
    if (!this.copies.first(`${e.channel}:${e.ts}`)) {
      log.trace({ channel: e.channel, ts: e.ts }, "slack event is a copy of a message already taken");
      return;
    }
    // A burst of messages (a socket read can hold hundreds) is taken in arrival order, a few per turn of the loop.
    await nextSlice();
    // Also what attachments and blocks say: an alert's or a forwarded message's words are nowhere else.
    const [text, files] = [await readableText(e, me.botUserId, this.names), messageFileList(e)];
    const bareMention = r.kind === "mention" && !r.midThread && text === "" && files.length === 0;
    // Remembered before the runner has the message: a slash command right after the answer
    // must find the thread. Written while the turn's own lookups run, not before them.
    const before = e.user && !bareMention ? this.remember(e.channel, e.user, key) : undefined;
    await this.turn(
      {
        ...(before ? { before } : {}),
        eventId,
        team,
        key,
        channel: e.channel,
        ts: e.ts,
        threadRoot: r.threadRoot,
        author: e.user ?? e.bot_id ?? "unknown",
        text,
        files,
        withHistory: r.midThread && r.kind !== "follow",
        bareMention,
        redelivered,
      },
      handed,
    );
  }

  /** The thread a user last talked to the bot in, in a channel (slash commands have no thread). */
  /** `key` is now `user`'s latest thread with the bot in `channel`: thread commands act on it. */
  remember(channel: string, user: string, key: ThreadKey): Promise<void> {
    return this.deps.state
      .set(lastThreadKey(channel, user), key, REMEMBER_MS)
      .catch((err: unknown) => log.warn({ err }, "last thread not remembered"));
  }

  async latestThread(channel: string, user: string): Promise<ThreadKey | undefined> {
    return this.deps.state.get<ThreadKey>(lastThreadKey(channel, user));
  }

  /** Resolves once every message delivered so far is with the runner (or was dropped). */
  async handedOver(): Promise<void> {
    while (this.arriving.size > 0) await Promise.all([...this.arriving]);
  }

  /** One more message on its way to the runner; the returned function says it got there (or was dropped). */
  private arrive(): () => void {
    let handed!: () => void;
    const arrival = new Promise<void>((resolve) => {
      handed = resolve;
    });
    this.arriving.add(arrival);
    void arrival.then(() => this.arriving.delete(arrival));
    return handed;
  }

  /** One message to answer: acknowledge it, hand it to the runner, clear the acknowledgement. */
  async turn(t: TurnInput, handed = this.arrive()): Promise<void> {
    try {
      await this.answer(t, handed);
    } finally {
      handed();
    }
  }

  private async answer(t: TurnInput, handed: () => void): Promise<void> {
    const key = t.key;
    // Someone the access lists refuse sees no :eyes:, only a private sentence (once an hour).
    const from = { dm: t.channel.startsWith("D"), workspace: t.team };
    const admitted = this.deps.runner.admit?.({
      platform: "slack",
      channel: t.channel,
      user: { id: t.author },
      from,
    });
    const refused = admitted !== undefined && admitted !== "yes";
    // Looked up at once, beside `before`: each is a round trip on the way to the turn's first word.
    const name = refused || t.bareMention ? undefined : this.names.of(t.author);
    const place: SlackPlace = {
      team: t.team,
      channel: t.channel,
      threadTs: t.threadRoot,
      replied: t.ts !== t.threadRoot,
      user: t.author,
      assistant: (await this.deps.state.get(assistantKey(key)).catch(() => undefined)) !== undefined,
    };
    const reply = new SlackReply(
      {
        web: this.deps.writes,
        scheduler: this.deps.scheduler,
        intervalMs: this.deps.config.slack.updateIntervalMs,
        native: this.deps.native,
        ...(this.deps.sessions ? { sessions: this.deps.sessions } : {}),
        ...(this.deps.clears ? { clears: this.deps.clears } : {}),
      },
      place,
    );
    if (refused) {
      if (admitted === "tell") await reply.notice(REFUSED_NOTE).catch(() => undefined);
      return;
    }
    if (t.bareMention) {
      // Told once for the mention's two events (app_mention and message), which may reach two replicas.
      if (await this.deps.runner.firstSight(`${t.channel}:${t.ts}`).catch(() => true))
        await reply
          .notice(NOTHING_ASKED)
          .catch((err: unknown) => log.debug({ err }, "bare mention not answered"));
      return;
    }
    const [asker, attachments] = await Promise.all([
      name ?? t.author,
      messageFiles(t.files, this.deps.token, this.deps.reads),
      t.before,
    ]);
    // Acknowledged once the runner accepts it: a copy of a message already taken
    // (app_mention + message, a redelivery, also on another replica) gets no second :eyes:.
    let ack: Promise<boolean> = Promise.resolve(false);
    const inbound: Inbound = {
      id: t.eventId,
      aliases: [`${t.channel}:${t.ts}`],
      key,
      platform: "slack",
      channel: t.channel,
      // A message's ts is its time in seconds, to the microsecond.
      sentAt: Number(t.ts) * 1000,
      user: { id: t.author, name: asker },
      // Slack's direct-message channel ids start with D.
      from,
      text: t.text,
      attachments,
      history: t.withHistory
        ? () =>
            threadHistory(this.deps, this.names, { channel: t.channel, ts: t.ts, threadRoot: t.threadRoot })
        : undefined,
      reply,
      ...(reply.place.assistant ? {} : { mark: `${t.channel}:${t.ts}` }),
      ...(t.redelivered ? { redelivered: true } : {}),
      onStored: () => this.acks.release(t.eventId),
      // The replica that answers acknowledges: copies reaching other replicas add no second :eyes:.
      onAccepted: () => {
        ack = this.acknowledge(reply, t.channel, t.ts);
      },
    };
    try {
      const handling = this.deps.runner.handle(inbound);
      handed();
      await handling;
    } finally {
      // The :eyes: goes when the workspace's budget allows (reactions.remove is Tier 2):
      // the turn is over without it, so a shutdown's drain never waits for it. Left to
      // another process with the message, it is that one's to take away (a second removal
      // would spend a Tier 2 place the first one's addition did not pay for).
      if ((await ack) && inbound.mark && !reply.left) void this.deps.eyes.remove(inbound.mark);
    }
  }

  /** Within a second the user sees the bot is on it: the assistant status, or :eyes: on the message. */
  private async acknowledge(reply: SlackReply, channel: string, ts: string): Promise<boolean> {
    try {
      if (reply.place.assistant) await reply.status("is thinking…");
      else await this.deps.eyes.add(channel, ts);
      return true;
    } catch (err) {
      log.debug({ err }, "acknowledgement not shown");
      return false;
    } finally {
      void reply.startSession();
    }
  }
}
