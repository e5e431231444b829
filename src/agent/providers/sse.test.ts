import { _iterSSEMessages as anthropicMessages } from "@anthropic-ai/sdk/core/streaming";
import { _iterSSEMessages } from "openai/core/streaming";
import { describe, expect, it } from "vitest";
import { readSse, type SseMessage, Utf8Pieces } from "./sse.js";

/** A body that hands on `bytes` in the pieces that `cuts` (offsets) make. */
function bodyOf(bytes: Uint8Array, cuts: number[] = []): ReadableStream<Uint8Array> {
  const pieces: Uint8Array[] = [];
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    if (cut > at) pieces.push(bytes.slice(at, cut));
    at = Math.max(at, cut);
  }
  return new ReadableStream({
    pull(controller) {
      const piece = pieces.shift();
      if (piece) controller.enqueue(piece);
      else controller.close();
    },
  });
}

async function ours(body: ReadableStream<Uint8Array>): Promise<SseMessage[]> {
  const messages: SseMessage[] = [];
  await readSse(new Response(body), (m) => {
    messages.push(m);
    return true;
  });
  return messages;
}

/** The OpenAI SDK's own reading of the same body: the rules this parser follows. */
async function sdks(body: ReadableStream<Uint8Array>): Promise<SseMessage[]> {
  const messages: SseMessage[] = [];
  for await (const sse of _iterSSEMessages(new Response(body), new AbortController())) {
    messages.push({ event: sse.event, data: sse.data });
  }
  return messages;
}

const encoder = new TextEncoder();

/** Every rule at once: CRLF, CR and LF endings, comments, events, multi-line data, unknown fields, 2-4 byte characters. */
const STREAM = encoder.encode(
  [
    ": a comment first\n",
    'data: {"a":1}\n\n',
    'data:{"no space":true}\r\n\r\n',
    "event: ping\rdata: x\r\r",
    "data: first line\ndata:  two spaces kept one\ndata\n\n",
    "id: 7\nretry: 100\nfoo: bar\ndata: after unknown fields\n\n",
    "event: only an event\n\n",
    "\n\n\n",
    "data: é ü 漢字 🎉 and a lone ☃\n\n",
    "data: ends with CR\r",
    "\ndata: [DONE]\n\n",
    "data: never finished",
  ].join(""),
);

describe("server-sent events read from a body", () => {
  it("hands on the same messages as the OpenAI SDK, in one piece", async () => {
    const expected = await sdks(bodyOf(STREAM));
    expect(expected.length).toBe(8);
    expect(expected.at(-1)).toEqual({ event: null, data: "ends with CR\n[DONE]" });
    expect(await ours(bodyOf(STREAM))).toEqual(expected);
    // Anthropic's SDK reads events by the same rules.
    const anthropics: SseMessage[] = [];
    for await (const sse of anthropicMessages(new Response(bodyOf(STREAM)), new AbortController())) {
      anthropics.push({ event: sse.event, data: sse.data });
    }
    expect(anthropics).toEqual(expected);
  });

  it("hands on the same messages wherever the bytes are cut, inside a character or between CR and LF", async () => {
    const expected = await sdks(bodyOf(STREAM));
    for (let cut = 1; cut < STREAM.length; cut++) {
      expect(await ours(bodyOf(STREAM, [cut])), `cut at byte ${cut}`).toEqual(expected);
    }
    // Many small pieces: every byte on its own, then pieces of 2, 3 and 5.
    for (const size of [1, 2, 3, 5]) {
      const cuts = Array.from({ length: Math.ceil(STREAM.length / size) }, (_, i) => i * size);
      expect(await ours(bodyOf(STREAM, cuts)), `pieces of ${size}`).toEqual(expected);
    }
  });

  it("stops handing on messages, and cancels the body, once told to stop", async () => {
    let cancelled = false;
    const bytes = encoder.encode("data: 1\n\ndata: 2\n\ndata: 3\n\n");
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes);
      },
      cancel() {
        cancelled = true;
      },
    });
    const seen: string[] = [];
    await readSse(new Response(body), (m) => {
      seen.push(m.data);
      return m.data !== "2";
    });
    expect(seen).toEqual(["1", "2"]);
    expect(cancelled).toBe(true);
  });

  it("throws what the callback throws, and a failed read, with the body let go", async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode("data: {oops\n\n"));
      },
      cancel() {
        cancelled = true;
      },
    });
    await expect(readSse(new Response(body), (m) => JSON.parse(m.data))).rejects.toThrow(SyntaxError);
    expect(cancelled).toBe(true);

    let pulls = 0;
    const broken = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulls++ === 0) controller.enqueue(encoder.encode("data: 1\n\ndata: half"));
        else controller.error(new Error("terminated"));
      },
    });
    const seen: string[] = [];
    await expect(
      readSse(new Response(broken), (m) => {
        seen.push(m.data);
        return true;
      }),
    ).rejects.toThrow("terminated");
    expect(seen).toEqual(["1"]);
  });
});

describe("the body's bytes as text", () => {
  /** The text a streaming TextDecoder makes of `bytes` cut at `cuts`, and ours. */
  function both(bytes: Uint8Array, cuts: number[]): [string, string] {
    const theirs = new TextDecoder();
    const mine = new Utf8Pieces();
    let a = "";
    let b = "";
    let at = 0;
    for (const cut of [...cuts, bytes.length]) {
      a += theirs.decode(bytes.slice(at, cut), { stream: true });
      b += mine.write(bytes.slice(at, cut));
      at = cut;
    }
    return [a + theirs.decode(), b + mine.end()];
  }

  it("is TextDecoder's text wherever the bytes are cut: a leading BOM dropped, later ones kept, bad bytes replaced", () => {
    const bom = [0xef, 0xbb, 0xbf];
    const bytes = new Uint8Array([
      ...bom,
      ...encoder.encode("data: é 漢字 🎉\n"),
      ...bom,
      0xff,
      0xc3,
      0x28,
      ...encoder.encode(" end "),
      0xe6,
      0xbc,
    ]);
    const [whole] = both(bytes, []);
    expect(whole.startsWith("data: é")).toBe(true);
    expect(whole).toContain("\ufeff");
    expect(whole).toContain("\ufffd");
    for (let cut = 0; cut <= bytes.length; cut++) {
      const [theirs, mine] = both(bytes, [cut]);
      expect(mine, `cut at byte ${cut}`).toBe(theirs);
    }
    const [theirs, mine] = both(
      bytes,
      Array.from({ length: bytes.length }, (_, i) => i),
    );
    expect(mine, "byte by byte").toBe(theirs);
  });

  it("drops a byte-order mark split over the first pieces, and an empty first piece changes nothing", () => {
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode("data: x\n")]);
    expect(both(bytes, [0, 1, 2])).toEqual(["data: x\n", "data: x\n"]);
  });
});
