/** A file attached to a user's message, not yet downloaded. */
export interface InboundFile {
  name: string;
  mimeType: string;
  size: number;
  /** Loads the bytes (platform download with auth, at most 30 s); may throw, also when `signal` aborts. */
  fetch(signal?: AbortSignal): Promise<Uint8Array>;
}

/** An earlier message of a thread the bot joins mid-way. */
export interface PriorMessage {
  author: string;
  text: string;
  /** True when the bot wrote it. */
  fromBot: boolean;
}

/** What an adapter knows of where a message came from, beyond its channel and author. */
export interface Provenance {
  dm: boolean;
  /** Slack team id or Discord guild id. */
  workspace?: string;
  /** Discord: the author's role ids. */
  roles?: string[];
}
