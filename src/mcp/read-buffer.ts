import { deserializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { DEFAULT_MAX_ANSWER_MB } from "./settings.js";

/** mcp.maxAnswerMb in bytes. */
export const answerBytes = (mb: number | undefined) => Math.round((mb ?? DEFAULT_MAX_ANSWER_MB) * 2 ** 20);

/** Marks the error answer that stands in for an answer too large to read (see TooLargeAnswer). */
export const TOO_LARGE = "switchboard.answer_too_large";
/** JSON-RPC's "internal error": the request failed on our side of the pipe, not in the tool. */
const INTERNAL_ERROR = -32603;
/** Enough of a dropped message's ends to find its id, whichever end the server writes it at. */
const ENDS = 512;
const NEWLINE = 0x0a;

/**
 * A message too large to read that no error answer could stand in for: a response whose
 * id neither end shows (`response`; no telling which call it was for), or a request or
 * notification of the server's.
 */
export class TooLargeMessageError extends Error {
  constructor(
    readonly bytes: number,
    readonly response: boolean,
  ) {
    super(`a message of ${bytes} bytes from the server was dropped`);
  }
}

/** Megabytes as the person reads them in a sentence: 64, 0.5. */
export const megabytes = (bytes: number) => `${Math.round((bytes / 2 ** 20) * 10) / 10} MB`;

interface Dropping {
  bytes: number;
  head: Buffer;
  tail: Buffer;
}

/**
 * Stands in for the SDK's ReadBuffer (shared/stdio.js), whose limit (10 MiB by default) is
 * on everything buffered: one answer over it throws, and the SDK then closes the transport,
 * killing the server and every call on it. server-filesystem sends a file twice (content
 * and structuredContent), as base64 for media: a 4 MB photo is over. Here the limit is per
 * message: a line over it is dropped as it streams in, never held whole, and its request
 * gets an error answer (a JSON-RPC error with TOO_LARGE in its data) while the server and
 * its other calls go on. Chunks are joined once per line: the SDK's concat per chunk
 * copies a message of n bytes n / 64 KiB times.
 */
export class BoundedReadBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  private dropping: Dropping | undefined;
  private ready: Array<Buffer | JSONRPCMessage | TooLargeMessageError> = [];

  constructor(private readonly maxBytes: number) {}

  append(chunk: Buffer): void {
    let rest = chunk;
    while (rest.length > 0) {
      const end = rest.indexOf(NEWLINE);
      const part = end === -1 ? rest : rest.subarray(0, end);
      if (this.dropping) this.drop(part);
      else if (this.size + part.length > this.maxBytes) this.startDropping(part);
      else {
        this.chunks.push(part);
        this.size += part.length;
      }
      if (end === -1) return;
      this.endLine();
      rest = rest.subarray(end + 1);
    }
  }

  /** The next message; throws (after taking it) for one that is not JSON-RPC, as the SDK's does. */
  readMessage(): JSONRPCMessage | null {
    const next = this.ready.shift();
    if (next === undefined) return null;
    if (next instanceof TooLargeMessageError) throw next;
    if (!Buffer.isBuffer(next)) return next;
    return deserializeMessage(next.toString("utf8").replace(/\r$/, ""));
  }

  clear(): void {
    this.chunks = [];
    this.size = 0;
    this.dropping = undefined;
    this.ready = [];
  }

  private startDropping(part: Buffer): void {
    const last = this.chunks.at(-1);
    this.dropping = {
      bytes: this.size + part.length,
      head: Buffer.concat([...this.chunks, part], Math.min(ENDS, this.size + part.length)),
      tail: Buffer.concat(
        last ? [last.subarray(-ENDS), part.subarray(-ENDS)] : [part.subarray(-ENDS)],
      ).subarray(-ENDS),
    };
    this.chunks = [];
    this.size = 0;
  }

  private drop(part: Buffer): void {
    const dropping = this.dropping;
    if (!dropping) return;
    dropping.bytes += part.length;
    const tail = Buffer.concat([dropping.tail, part.subarray(-ENDS)]);
    dropping.tail = tail.subarray(-ENDS);
  }

  private endLine(): void {
    const dropping = this.dropping;
    if (dropping) {
      this.dropping = undefined;
      const head = dropping.head.toString("utf8");
      const response = RESPONSE_HEAD.exec(head);
      const id = response && idOf(response[1] ?? "", dropping.tail.toString("utf8"));
      this.ready.push(
        id === undefined || id === null
          ? new TooLargeMessageError(dropping.bytes, response !== null)
          : tooLarge(id, dropping.bytes, this.maxBytes),
      );
      return;
    }
    const line = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.size);
    this.chunks = [];
    this.size = 0;
    if (line && line.length > 0) this.ready.push(line);
  }
}

function tooLarge(id: string | number, bytes: number, limit: number): JSONRPCMessage {
  return {
    jsonrpc: "2.0",
    id,
    error: {
      code: INTERNAL_ERROR,
      message: `the answer (${megabytes(bytes)} or more) was larger than the bot reads (${megabytes(limit)})`,
      data: { [TOO_LARGE]: { bytes, limit } },
    },
  };
}

const VALUE = String.raw`-?\d+|"(?:[^"\\]|\\.)*"`;
/**
 * A response: `result` first (the TypeScript SDK, its id last) or after `jsonrpc` and `id`
 * (the Python, Go and Rust SDKs). A request from the server never matches: its id, from
 * the server's own count, would be taken for one of ours.
 */
const RESPONSE_HEAD = new RegExp(
  String.raw`^\s*\{((?:\s*"(?:jsonrpc|id)"\s*:\s*(?:${VALUE})\s*,)*)\s*"result"\s*:`,
);
const FIRST_ID = new RegExp(String.raw`"id"\s*:\s*(${VALUE})`);
const LAST_ID = new RegExp(String.raw`"id"\s*:\s*(${VALUE})\s*\}\s*$`);

/** A dropped response's id, from the members before its result or from its end. */
function idOf(leading: string, tail: string): string | number | undefined {
  const found = FIRST_ID.exec(leading)?.[1] ?? LAST_ID.exec(tail)?.[1];
  if (found === undefined) return undefined;
  try {
    return JSON.parse(found) as string | number;
  } catch {
    return undefined;
  }
}
