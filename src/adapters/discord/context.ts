import type {
  APIInteractionGuildMember,
  Client,
  GuildMember,
  TextBasedChannel,
  ThreadChannel,
} from "discord.js";
import type { Provenance } from "../../core/inbound.js";
import type { ThreadKey } from "../../core/thread.js";
import { decodeThread, encodeThread, platformOf } from "../../core/thread.js";
import { log } from "../../log.js";
import type { AdapterDeps } from "../../runtime/contract.js";
import type { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { LateThreads } from "./late-threads.js";
import { ChannelAnswers } from "./replies.js";
import type { ReplyOptions } from "./reply.js";

export function guildKey(guildId: string, channelId: string): ThreadKey {
  return encodeThread({ platform: "discord", guild: guildId, channel: channelId });
}

export function dmKey(channelId: string): ThreadKey {
  return encodeThread({ platform: "discord", guild: "dm", channel: channelId });
}

/** The channel (thread or DM) a key names. */
export function channelOfKey(key: ThreadKey): string | undefined {
  if (platformOf(key) !== "discord") return undefined;
  const ref = decodeThread(key);
  return ref.platform === "discord" ? ref.channel : undefined;
}

/** Guild and roles of an author or clicker, for the access lists. */
export function provenanceOf(
  guildId: string | null,
  member: GuildMember | APIInteractionGuildMember | null | undefined,
): Provenance {
  if (!guildId) return { dm: true };
  // A cached member has a role manager; an uncached one comes as the API's role id list.
  const roles = !member ? [] : Array.isArray(member.roles) ? member.roles : [...member.roles.cache.keys()];
  return { dm: false, workspace: guildId, roles };
}

/**
 * The channel people name in `agent.channelPrompts`: a thread's parent text (or forum)
 * channel, since threads come and go; any other channel is itself.
 */
export function configuredChannel(channel: TextBasedChannel): string {
  return (channel.isThread() && channel.parentId) || channel.id;
}

/** A thread name from the first words of a question (1-100 chars, as Discord requires). */
export function provisionalName(text: string, fallback = "Question"): string {
  const words = text.replace(/\s+/g, " ").trim().split(" ").slice(0, 8).join(" ");
  const name = words.length > 80 ? `${words.slice(0, 79)}…` : words;
  return name || fallback;
}

/** How long a thread counts as renamed; Discord archives idle threads well before. */
const RENAMED_TTL_MS = 90 * 24 * 60 * 60 * 1000;

/** What the event and command handlers share for one connected bot. */
export class DiscordContext {
  /** The conversations of answers written in a channel, for the replies that go on with them. */
  readonly answers: ChannelAnswers;
  /** Threads given up on while Discord may still open them (see `openThread`). */
  readonly lateThreads: LateThreads;

  constructor(
    readonly client: Client,
    readonly deps: AdapterDeps,
    /** The bot's write scheduler: Discord's global limit is per bot. */
    readonly scheduler: WriteScheduler,
    /** A message is stored where no stop of this process can lose it (`Inbound.onStored`). */
    readonly stored: (messageId: string) => void = () => {},
  ) {
    this.answers = new ChannelAnswers(deps.state);
    this.lateThreads = new LateThreads(client);
  }

  get botId(): string | undefined {
    return this.client.user?.id;
  }

  /** `shownAlready`: the bot opened a thread for this reply, so the person sees it begin. */
  replyOptions(shownAlready = false): ReplyOptions {
    const { editIntervalMs, maxFileBytes } = this.deps.config.discord;
    return { scheduler: this.scheduler, intervalMs: editIntervalMs, maxFileBytes, shownAlready };
  }

  /** A rename for threads the bot opened, at most once per thread; undefined for others. */
  renamer(thread: ThreadChannel): ((title: string) => Promise<void>) | undefined {
    if (thread.ownerId !== this.botId) return undefined;
    return async (title) => {
      if (title.trim() === "") return;
      // Renames are limited to about 2 per 10 minutes: once per thread, across restarts
      // and replicas, claimed before the call so two processes never both rename.
      if (!(await this.deps.state.setIfAbsent(`discord:renamed:${thread.id}`, 1, RENAMED_TTL_MS))) return;
      await thread.setName(title);
      log.debug({ thread: thread.id }, "thread renamed with its title");
    };
  }
}
