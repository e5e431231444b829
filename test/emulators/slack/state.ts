import type { EmuTrigger, EmuView, ModalState } from "./modals.js";

/** What the Slack emulator remembers, in a shape tests can read directly. */

export const TEAM_ID = "T1";
export const APP_ID = "A1";
export const BOT_USER_ID = "U_BOT";
export const BOT_ID = "B_BOT";

export interface EmuUser {
  id: string;
  name: string;
  realName: string;
  isBot: boolean;
  botId?: string;
  /** A person of another organization in a Slack Connect channel: their own workspace. */
  team?: string;
}

export interface EmuChannel {
  id: string;
  name: string;
  /** `C` public channel, `G` private channel, `D` direct message with `user` (or between `members`). */
  kind: "channel" | "group" | "im";
  user?: string;
  /**
   * The bot was invited (a DM with it always has it; one between other people never): it
   * may post only where it is a member.
   */
  botMember: boolean;
  /** Archived: its history stays, and nothing more is posted in it. */
  archived?: boolean;
  /** The people in the channel; absent: everyone (the default, so tests may name anyone). */
  members?: Set<string>;
}

export interface EmuFile {
  id: string;
  name: string;
  title: string;
  mimetype: string;
  size: number;
  bytes: Uint8Array;
  /** Set by files.completeUploadExternal; files uploaded but never completed stay unshared. */
  shared: boolean;
}

export interface EmuEdit {
  text: string;
  blocks?: unknown[];
  at: number;
}

export interface EmuMessage {
  channel: string;
  ts: string;
  thread_ts?: string;
  user?: string;
  /** The author's workspace when it is not the bot's (Slack Connect). */
  team?: string;
  bot_id?: string;
  subtype?: string;
  /** `text`, or `markdown_text` when the message was written with it. */
  text: string;
  markdown?: boolean;
  blocks?: unknown[];
  /** Legacy attachments: an alert bot's content, a forwarded message (see shared-messages.ts). */
  attachments?: unknown[];
  /** A webhook's or integration's display name (`bot_message`). */
  username?: string;
  /** Message metadata (`metadata` on chat.postMessage / update): read back only with `include_all_metadata`. */
  metadata?: { event_type: string; event_payload: Record<string, unknown> };
  /** Every earlier version, oldest first (chat.update, appendStream, stopStream). */
  edits: EmuEdit[];
  files: EmuFile[];
  /** reaction name -> users who reacted. */
  reactions: Map<string, Set<string>>;
  deleted: boolean;
  /** Native stream state (chat.startStream .. chat.stopStream, or past the stream's lifetime). */
  stream?: { state: "streaming" | "stopped" | "expired"; startedAt: number; chunks: unknown[] };
}

export interface EmuEphemeral {
  channel: string;
  user: string;
  text: string;
  blocks?: unknown[];
  thread_ts?: string;
  /** "chat.postEphemeral", "response_url", "ack", or "slack" (Slack's own error, e.g. a slash command timeout). */
  via: string;
  /**
   * The person sees it. Slack answers ok to an ephemeral message for a thread that has no
   * replies yet and shows it nowhere ("Ephemeral messages in threads are only shown if
   * there is already an active thread", chat.postEphemeral docs): false then.
   */
  shown: boolean;
}

export interface AssistantThreadState {
  channel: string;
  threadTs: string;
  /** Every status set, in order ("" clears). */
  statuses: string[];
  /**
   * The status the thread shows now: the last one set, until the bot posts in the thread
   * or two minutes pass. Slack clears it then ("automatically cleared when the app sends a
   * reply"; "A two minute timeout applies", assistant.threads.setStatus docs), whichever
   * answer the post belongs to.
   */
  status: string;
  titles: string[];
  prompts: { title?: string; prompts: { title: string; message: string }[] }[];
}

export interface ResponseUrlPost {
  id: string;
  body: Record<string, unknown>;
}

/** Slack clears an assistant thread's status two minutes after it was set (assistant.threads.setStatus docs). */
export const ASSISTANT_STATUS_TIMEOUT_MS = 120_000;

/** An assistant thread whose status expires `timeoutMs()` after it was set, by the state's clock. */
class AssistantThread implements AssistantThreadState {
  readonly statuses: string[] = [];
  readonly titles: string[] = [];
  readonly prompts: AssistantThreadState["prompts"] = [];
  private shown = "";
  private setAt = 0;

  constructor(
    readonly channel: string,
    readonly threadTs: string,
    private readonly clock: { now(): number; statusTimeoutMs: number },
  ) {}

  get status(): string {
    return this.clock.now() - this.setAt >= this.clock.statusTimeoutMs ? "" : this.shown;
  }

  set status(value: string) {
    this.shown = value;
    this.setAt = this.clock.now();
  }
}

/**
 * Slack-style timestamps ("1712345678.000042"): as Slack's, the time the message was made
 * (seconds and microseconds), unique and increasing within the workspace.
 */
export class TsClock {
  private last = 0;

  next(): string {
    this.last = Math.max(Date.now() * 1000, this.last + 1);
    return `${Math.floor(this.last / 1_000_000)}.${String(this.last % 1_000_000).padStart(6, "0")}`;
  }
}

export class SlackState implements ModalState {
  readonly users = new Map<string, EmuUser>();
  /** User group id (S…) -> its members' ids (usergroups.users.list). */
  readonly userGroups = new Map<string, string[]>();
  readonly channels = new Map<string, EmuChannel>();
  /** All messages of all channels, in the order they were written. */
  readonly messages: EmuMessage[] = [];
  /**
   * "channel ts" -> the message with that ts and the replies in the thread it roots, in
   * the order written: a lookup is then as cheap in a workspace of thousands of
   * messages as in a new one (a benchmark's thousands of turns polled, and the bot's
   * updates found, by scanning them all made the emulator the machine's busiest process).
   */
  private readonly byThread = new Map<string, EmuMessage[]>();
  /** Channel -> its messages, in the order written. */
  private readonly byChannel = new Map<string, EmuMessage[]>();
  readonly ephemerals: EmuEphemeral[] = [];
  readonly assistant = new Map<string, AssistantThreadState>();
  /** DM channel -> the suggested prompts set for its Messages tab (setSuggestedPrompts without a thread), in order. */
  readonly tabPrompts = new Map<string, AssistantThreadState["prompts"]>();
  readonly files = new Map<string, EmuFile>();
  readonly responses: ResponseUrlPost[] = [];
  readonly clock = new TsClock();
  /** Every trigger_id handed out with an interaction or slash command. */
  readonly triggers = new Map<string, EmuTrigger>();
  /** user -> the modal views they have open: the root first, the one they see last. */
  readonly views = new Map<string, EmuView[]>();
  /** Every view ever opened, closed ones too (`open: false`). */
  readonly viewsById = new Map<string, EmuView>();
  /** The clock assistant thread statuses expire by: a test may move it. */
  now: () => number = Date.now;
  /** How long an assistant thread's status shows without a message (Slack: 2 minutes). */
  statusTimeoutMs = ASSISTANT_STATUS_TIMEOUT_MS;

  constructor() {
    this.users.set(BOT_USER_ID, {
      id: BOT_USER_ID,
      name: "switchboard",
      realName: "Switchboard",
      isBot: true,
      botId: BOT_ID,
    });
    this.addChannel("C1", "general");
  }

  /**
   * A channel the bot is in (`/invite`d) unless `botMember` is false; everyone is in it
   * unless `members` names who is. A `D` id with `botMember` false is a direct message
   * between the `members`, where slash commands work and the bot sees nothing.
   */
  addChannel(
    id: string,
    name: string,
    opts: { botMember?: boolean; members?: string[]; archived?: boolean } = {},
  ): EmuChannel {
    const kind = id.startsWith("D") ? "im" : id.startsWith("G") ? "group" : "channel";
    const channel: EmuChannel = { id, name, kind, botMember: opts.botMember ?? true };
    if (opts.members) channel.members = new Set(opts.members);
    if (opts.archived) channel.archived = true;
    this.channels.set(id, channel);
    return channel;
  }

  /** Whether `user` is in `channel`: a DM holds its person alone. */
  isMember(channel: EmuChannel, user: string): boolean {
    if (user === BOT_USER_ID) return channel.botMember;
    if (channel.kind === "im" && channel.user !== undefined) return channel.user === user;
    return channel.members === undefined || channel.members.has(user);
  }

  /** Users are created on first use, so tests can name anyone. */
  user(id: string): EmuUser {
    let user = this.users.get(id);
    if (!user) {
      const name = id.replace(/^U_?/, "").toLowerCase() || id.toLowerCase();
      user = { id, name, realName: name.charAt(0).toUpperCase() + name.slice(1), isBot: false };
      this.users.set(id, user);
    }
    return user;
  }

  /** Another app's bot user (created on first use), as users.info knows it. */
  botUser(id: string, botId: string): EmuUser {
    let user = this.users.get(id);
    if (!user) {
      const name = id.replace(/^U_?/, "").toLowerCase();
      user = { id, name, realName: name, isBot: true, botId };
      this.users.set(id, user);
    }
    return user;
  }

  /** The DM channel between the bot and `user` (created on first use). */
  dmChannel(user: string): EmuChannel {
    const id = `D${user.replace(/^U_?/, "")}`;
    const existing = this.channels.get(id);
    if (existing) return existing;
    const channel: EmuChannel = { id, name: id, kind: "im", user, botMember: true };
    this.channels.set(id, channel);
    return channel;
  }

  find(channel: string, ts: string): EmuMessage | undefined {
    return this.byThread.get(`${channel} ${ts}`)?.find((m) => m.ts === ts && !m.deleted);
  }

  addMessage(
    fields: Omit<EmuMessage, "ts" | "edits" | "files" | "reactions" | "deleted"> & {
      files?: EmuFile[];
    },
  ): EmuMessage {
    const message: EmuMessage = {
      ...fields,
      ts: this.clock.next(),
      edits: [],
      files: fields.files ?? [],
      reactions: new Map(),
      deleted: false,
    };
    this.messages.push(message);
    listed(this.byChannel, message.channel, message);
    listed(this.byThread, `${message.channel} ${message.ts}`, message);
    if (message.thread_ts && message.thread_ts !== message.ts) {
      listed(this.byThread, `${message.channel} ${message.thread_ts}`, message);
      const assistant = this.assistant.get(`${message.channel}:${message.thread_ts}`);
      if (assistant && message.user === BOT_USER_ID) assistant.status = "";
    }
    return message;
  }

  /**
   * Whether `ts` names an active thread (see `EmuEphemeral.shown`): a reply in a thread, or
   * a message with at least one reply.
   */
  activeThread(channel: string, ts: string): boolean {
    const message = this.find(channel, ts);
    if (!message) return false;
    if (message.thread_ts && message.thread_ts !== message.ts) return true;
    return this.thread(channel, ts).length > 1;
  }

  /** The root and its replies, oldest first, without deleted ones. */
  thread(channel: string, ts: string): EmuMessage[] {
    return (this.byThread.get(`${channel} ${ts}`) ?? []).filter((m) => !m.deleted);
  }

  /** Top-level messages of a channel, oldest first. */
  history(channel: string): EmuMessage[] {
    return (this.byChannel.get(channel) ?? []).filter(
      (m) => !m.deleted && (!m.thread_ts || m.thread_ts === m.ts),
    );
  }

  /** The modal view `user` sees now (the top of their stack), if any. */
  openView(user: string): EmuView | undefined {
    return this.views.get(user)?.at(-1);
  }

  assistantThread(channel: string, threadTs: string): AssistantThreadState {
    const key = `${channel}:${threadTs}`;
    let state = this.assistant.get(key);
    if (!state) {
      state = new AssistantThread(channel, threadTs, this);
      this.assistant.set(key, state);
    }
    return state;
  }
}

/**
 * The JSON Slack returns for a message (conversations.replies and .history, events). A file
 * shared by a person of another organization in a Slack Connect channel is a stub in all of
 * them: its id and `file_access: "check_file_info"`, no name, type or URL. The app must ask
 * files.info for the rest.
 */
export function messageJson(m: EmuMessage, baseUrl: string, withMetadata = false): Record<string, unknown> {
  const out: Record<string, unknown> = { type: "message", ts: m.ts, text: m.text };
  if (withMetadata && m.metadata) out.metadata = m.metadata;
  if (m.user) out.user = m.user;
  if (m.bot_id) out.bot_id = m.bot_id;
  if (m.bot_id) out.app_id = APP_ID;
  if (m.subtype) out.subtype = m.subtype;
  if (m.thread_ts) out.thread_ts = m.thread_ts;
  if (m.blocks) out.blocks = m.blocks;
  if (m.attachments) out.attachments = m.attachments;
  if (m.username) out.username = m.username;
  const stubs = m.team !== undefined && m.team !== TEAM_ID;
  if (m.files.length) out.files = m.files.map((f) => (stubs ? fileStub(f) : fileJson(f, baseUrl)));
  if (m.edits.length) out.edited = { user: m.user ?? BOT_USER_ID, ts: m.ts };
  if (m.reactions.size) {
    out.reactions = [...m.reactions].map(([name, users]) => ({
      name,
      users: [...users],
      count: users.size,
    }));
  }
  return out;
}

function fileStub(f: EmuFile): Record<string, unknown> {
  return { id: f.id, mode: "file_access", file_access: "check_file_info" };
}

export function fileJson(f: EmuFile, baseUrl: string): Record<string, unknown> {
  return {
    id: f.id,
    name: f.name,
    title: f.title,
    mimetype: f.mimetype,
    filetype: f.name.split(".").pop() ?? "",
    size: f.size,
    url_private: `${baseUrl}/files/${f.id}/${encodeURIComponent(f.name)}`,
    url_private_download: `${baseUrl}/files/${f.id}/${encodeURIComponent(f.name)}?download=1`,
  };
}

/** Adds `item` to the list under `key`, starting the list on first use. */
function listed<T>(map: Map<string, T[]>, key: string, item: T): void {
  const list = map.get(key);
  if (list) list.push(item);
  else map.set(key, [item]);
}
