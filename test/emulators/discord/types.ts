/** Shapes of the Discord API objects the emulator stores and serves (the subset bots use). */

export interface UserObject {
  id: string;
  username: string;
  global_name: string | null;
  discriminator: string;
  avatar: null;
  bot?: boolean;
}

export const ChannelType = {
  GuildText: 0,
  DM: 1,
  GroupDM: 3,
  PublicThread: 11,
  GuildForum: 15,
} as const;

export interface ChannelObject {
  id: string;
  type: number;
  name?: string;
  guild_id?: string;
  parent_id?: string | null;
  owner_id?: string;
  recipients?: UserObject[];
  last_message_id?: string | null;
  position?: number;
  permission_overwrites?: unknown[];
  thread_metadata?: {
    archived: boolean;
    auto_archive_duration: number;
    archive_timestamp: string;
    locked: boolean;
  };
  message_count?: number;
  member_count?: number;
  flags?: number;
}

export interface StoredAttachment {
  id: string;
  filename: string;
  size: number;
  contentType: string;
  data: Buffer;
  url: string;
}

export interface StoredMessage {
  id: string;
  channelId: string;
  guildId?: string;
  author: UserObject;
  content: string;
  /** Earlier contents, oldest first (one entry per edit). */
  edits: string[];
  attachments: StoredAttachment[];
  mentions: UserObject[];
  createdAt: number;
  editedAt: number | null;
  /** 64 = ephemeral (interaction responses only). */
  flags: number;
  /** The nonce it was created with, and when: `enforce_nonce` returns it for the same nonce within minutes. */
  nonce?: string;
  /** Set when the message was written through an interaction token. */
  interactionId?: string;
  /** `allowed_mentions` as the bot sent it (who may be pinged). */
  allowedMentions?: unknown;
  deleted?: boolean;
  /** Action rows of buttons and selects, as the bot last sent them. */
  components?: unknown[];
  /** Embeds, as the bot last sent them. */
  embeds?: unknown[];
  /** The message this one replies to (`message_reference`), in the same channel. */
  replyTo?: string;
  /** Stickers sent in the message, by name (`sticker_items`). */
  stickers?: string[];
  /** A poll the message carries: its question and answers. */
  poll?: { question: string; answers: string[] };
  /**
   * A forward: the message forwarded, as it was then. The forward has no content of its own;
   * Discord sends the original's text and files in `message_snapshots`, without its author.
   */
  forwarded?: StoredMessage;
}

export interface StoredInteraction {
  id: string;
  token: string;
  type: number;
  name: string;
  channelId: string;
  userId: string;
  /** Callback types in order (4 reply, 5 deferred, 6 deferred update, 7 update, 8 autocomplete, 9 modal). */
  callbacks: number[];
  /** The modal the bot opened in answer (callback type 9), as the person sees it. */
  modal?: OpenedModal;
  /** For a component interaction: the message whose component was used. */
  messageId?: string;
  /** Autocomplete choices returned by the bot (callback type 8). */
  choices?: { name: string; value: string | number }[];
  /** Id of the message holding the original response, once there is one. */
  originalId?: string;
  followupIds: string[];
  /** `authorizing_integration_owners` as sent: "0" a server install, "1" a user install. */
  owners: Record<string, string>;
  /** ms between the interaction being sent and its first callback. */
  ackMs?: number;
  sentAt: number;
}

/** A component of an opened modal: the bot's JSON, with the ids Discord fills in. */
export type ModalComponent = Record<string, unknown> & { type: number; id: number };

/** One input of an opened modal (a text input, select, radio group, checkbox group, checkbox or file upload). */
export interface ModalField {
  customId: string;
  type: number;
  /** The Label's text, or the legacy text input's own label. */
  label: string;
  description?: string;
  /** The input component as the bot sent it (with its id). */
  component: ModalComponent;
}

/** A modal as Discord shows it to the person (callback type 9). */
export interface OpenedModal {
  customId: string;
  title: string;
  /** Top-level components (action rows, labels, text displays) with their ids. */
  components: ModalComponent[];
  /** Its inputs in order, by custom id: what the person can fill in. */
  fields: ModalField[];
  /** The contents of its text displays, in order. */
  texts: string[];
  openedAt: number;
  /** Ids of the modal-submit interactions sent for it (more than one when a submission was not answered). */
  submissions: string[];
}

export interface RestRecord {
  method: string;
  path: string;
  status: number;
  /** When the request came in. */
  arrived: number;
  /** When it was answered. */
  at: number;
}

export interface RenameRecord {
  channelId: string;
  name: string;
  at: number;
}
