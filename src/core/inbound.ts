/**
 * What the store keeps of a file on a message another process will answer (a message
 * handed over at a stop): its platform fetches it again from this (`Adapter.fileFrom`).
 */
export interface StoredFile {
  name: string;
  mimeType: string;
  size: number;
  /** Where the platform serves it (Slack's private URL, Discord's CDN link); never a token. */
  url: string;
}

/** A file attached to a user's message, not yet downloaded. */
export interface InboundFile {
  name: string;
  mimeType: string;
  size: number;
  /** Where the platform serves it, when it can be fetched again elsewhere (see StoredFile). */
  url?: string;
  /**
   * Why it cannot be read at all (the platform would not say what it is): the model is
   * told this instead of its content, and it is not fetched.
   */
  unreadable?: string;
  /** Loads the bytes (platform download with auth, at most 30 s); may throw, also when `signal` aborts. */
  fetch(signal?: AbortSignal): Promise<Uint8Array>;
}

/**
 * What the store keeps of a file the platform would not give (see `InboundFile.unreadable`):
 * why, so that a process answering the message in another's place tells the model too.
 */
export interface UnreadableFile {
  name: string;
  unreadable: string;
}

/** What the store keeps of a message's files: those the platform serves at a URL, and those it would not give. */
export function storedFiles(files: readonly InboundFile[]): Array<StoredFile | UnreadableFile> {
  return files.flatMap<StoredFile | UnreadableFile>(({ name, mimeType, size, url, unreadable }) =>
    unreadable ? [{ name, unreadable }] : url ? [{ name, mimeType, size, url }] : [],
  );
}

/** A file that cannot be read at all: the model is told `why`, and nothing is fetched. */
export function unreadableFile(name: string, why: string): InboundFile {
  return {
    name,
    mimeType: "application/octet-stream",
    size: 0,
    unreadable: why,
    fetch: () => Promise.reject(new Error(`${name}: ${why}`)),
  };
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
