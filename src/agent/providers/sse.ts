import { AsyncResource } from "node:async_hooks";
import { finished, type Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { bodyStreamOf } from "./model-fetch.js";

/*
 * Server-sent events read straight from a response body, parsed as the OpenAI and
 * Anthropic SDKs parse them (their SSEDecoder: `event` and `data` fields, comments, lines
 * ended by CRLF, LF or CR, an event dispatched at a blank line, an unfinished one at the
 * end dropped); a test holds the two to the same messages.
 *
 * Why not the SDKs' own streams: each chunk passes through three async generators there,
 * with a copy of the buffered bytes per chunk and a decode per line. A streamed answer is
 * a chunk a word, and in a process answering two hundred threads at once that reading
 * took more CPU than the rest of the model call's path, every promise of it also paying
 * the process's AsyncLocalStorage hook. Here a chunk is one read of the body, decoded
 * once, its lines found with indexOf, and its messages handed to a plain callback.
 */

/** One event: its `event` field (null when it had none) and its data lines joined by "\n". */
export interface SseMessage {
  event: string | null;
  data: string;
}

const LF = "\n";
const CR = "\r";

/** Splits text, fed in pieces of any size, into lines and lines into messages. */
export class SseParser {
  private partial = "";
  /** The last piece ended in CR: a LF first in the next one ends no second line. */
  private afterCR = false;
  private event: string | null = null;
  private data: string[] = [];
  /** `onMessage` returned false: nothing more is handed on. */
  stopped = false;

  /** `onMessage` returning false: no message is handed on after it. */
  constructor(private readonly onMessage: (message: SseMessage) => boolean | undefined) {}

  push(text: string): void {
    let at = 0;
    if (this.afterCR) {
      this.afterCR = false;
      if (text.startsWith(LF)) at = 1;
    }
    let lf = text.indexOf(LF, at);
    let cr = text.indexOf(CR, at);
    while ((lf !== -1 || cr !== -1) && !this.stopped) {
      let end: number;
      let next: number;
      if (cr === -1 || (lf !== -1 && lf < cr)) {
        end = lf;
        next = lf + 1;
      } else {
        end = cr;
        next = cr + 1;
        if (next === text.length) this.afterCR = true;
        else if (text.charCodeAt(next) === 10) next += 1;
      }
      const piece = text.slice(at, end);
      const line = this.partial === "" ? piece : this.partial + piece;
      this.partial = "";
      this.line(line);
      at = next;
      if (lf !== -1 && lf < at) lf = text.indexOf(LF, at);
      if (cr !== -1 && cr < at) cr = text.indexOf(CR, at);
    }
    if (at < text.length) this.partial += text.slice(at);
  }

  private line(line: string): void {
    if (line === "") {
      if (!this.event && this.data.length === 0) return;
      const message = {
        event: this.event,
        data: this.data.length === 1 ? (this.data[0] as string) : this.data.join(LF),
      };
      this.event = null;
      this.data = [];
      if (this.onMessage(message) === false) this.stopped = true;
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    if (field !== "data" && field !== "event") return;
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else this.event = value;
  }
}

/**
 * Reads the response's body to its end, handing each message to `onMessage` as its bytes
 * arrive; stops early (and cancels the body) when `onMessage` returns false. What
 * `onMessage` throws ends the reading and is thrown here, as is a failed read or a
 * response without a body.
 */
export async function readSse(
  response: Response,
  onMessage: (message: SseMessage) => boolean | undefined,
): Promise<void> {
  const parser = new SseParser(onMessage);
  const decoder = new Utf8Pieces();
  // The body as undici hands it when modelFetch made the response, else its web stream.
  const node = bodyStreamOf(response);
  if (node) return readNodeBody(node, parser, decoder);
  const body = response.body;
  if (!body) throw new Error("the model's response has no body");
  // Leaving the loop early (stopped, or a message or a read failed) cancels the body.
  for await (const chunk of body) {
    parser.push(decoder.write(chunk));
    if (parser.stopped) return;
  }
  parser.push(decoder.end());
}

/**
 * The body's bytes as text, piece by piece, as a streaming TextDecoder gives them (a
 * character split between two pieces comes whole with the second, a leading byte-order
 * mark is dropped, bytes that are not UTF-8 become U+FFFD), through Node's StringDecoder:
 * about a third of TextDecoder's cost a call, and a streamed answer is a call a word.
 */
export class Utf8Pieces {
  private readonly decoder = new StringDecoder("utf8");
  private first = true;

  write(bytes: Uint8Array): string {
    return this.dropBom(this.decoder.write(bytes as Buffer));
  }

  end(): string {
    return this.dropBom(this.decoder.end());
  }

  private dropBom(text: string): string {
    if (!this.first || text === "") return text;
    this.first = false;
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  }
}

/**
 * Undici's body read with its `data` events, not its async iterator: the iterator makes
 * several promises a chunk, and a streamed answer is a chunk a word, each promise paying
 * the process's AsyncLocalStorage hook (with two hundred answers at once, one promise in
 * eight of the process's was made here). Each chunk's work still runs in the reader's
 * async context, not the socket's. Stopping early, or a message that throws, destroys
 * the body, which lets the connection go; a body that closes before its end fails as the
 * iterator failed (Node's premature-close error), and so does a failed read.
 */
function readNodeBody(body: Readable, parser: SseParser, decoder: Utf8Pieces): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const settle = (error?: unknown) => {
      if (settled) return;
      settled = true;
      body.off("data", onData);
      if (error === undefined) resolve();
      else reject(error);
    };
    /** Parses `text`; false once what `onMessage` threw ended the reading. */
    const push = (text: string): boolean => {
      try {
        parser.push(text);
        return true;
      } catch (err) {
        settle(err);
        return false;
      }
    };
    // One resource for both handlers, entered at each call: AsyncResource.bind makes a
    // resource per function and, on Node 20, two deprecation wrappers for its
    // `asyncResource` property, 10 µs a call in a loop and 60 µs amid other work.
    const reader = new AsyncResource("SseReader");
    const read = (chunk: Buffer) => {
      if (settled) return;
      if (!push(decoder.write(chunk))) body.destroy();
      else if (parser.stopped) {
        settle();
        body.destroy();
      }
    };
    const ended = (error?: Error | null) => {
      if (settled) return;
      if (error) settle(error);
      else if (push(decoder.end())) settle();
    };
    const onData = (chunk: Buffer) => reader.runInAsyncScope(read, undefined, chunk);
    const onEnd = (error?: Error | null) => reader.runInAsyncScope(ended, undefined, error);
    body.on("data", onData);
    finished(body, { writable: false }, onEnd);
  });
}
