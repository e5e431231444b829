import { describe, expect, it } from "vitest";
import { BoundedReadBuffer, TOO_LARGE, TooLargeMessageError } from "./read-buffer.js";

/** Everything the buffer gives for these chunks, an error standing for a message it threw. */
function read(buffer: BoundedReadBuffer, ...chunks: string[]): unknown[] {
  const out: unknown[] = [];
  for (const chunk of chunks) {
    buffer.append(Buffer.from(chunk));
    for (;;) {
      try {
        const message = buffer.readMessage();
        if (message === null) break;
        out.push(message);
      } catch (err) {
        out.push(err);
      }
    }
  }
  return out;
}

const line = (message: object) => `${JSON.stringify(message)}\n`;
const big = "x".repeat(5_000);

describe("BoundedReadBuffer", () => {
  it("reads messages split across chunks and several in one chunk, CRLF or LF", () => {
    const a = line({ jsonrpc: "2.0", method: "a" });
    const b = line({ jsonrpc: "2.0", method: "b" }).replace("\n", "\r\n");
    const c = line({ jsonrpc: "2.0", method: "c" });
    expect(
      read(new BoundedReadBuffer(1_000), a.slice(0, 7), a.slice(7) + b + c.slice(0, 3), c.slice(3)),
    ).toEqual(["a", "b", "c"].map((method) => ({ jsonrpc: "2.0", method })));
  });

  it("answers a response over the limit with an error for its id, found last (TypeScript) or first (Python)", () => {
    const ts = line({ result: { content: [{ type: "text", text: big }] }, jsonrpc: "2.0", id: 7 });
    const py = line({ jsonrpc: "2.0", id: "req-8", result: { content: [{ type: "text", text: big }] } });
    const after = line({ result: {}, jsonrpc: "2.0", id: 9 });
    const chunks = (s: string) => s.match(/[\s\S]{1,700}/g) ?? [];
    const out = read(new BoundedReadBuffer(1_000), ...chunks(ts), ...chunks(py), after);
    expect(out).toHaveLength(3);
    expect(out[0]).toMatchObject({ id: 7, error: { data: { [TOO_LARGE]: { limit: 1_000 } } } });
    expect(out[1]).toMatchObject({ id: "req-8", error: { message: /larger than the bot reads/ } });
    expect(out[2]).toEqual({ result: {}, jsonrpc: "2.0", id: 9 });
  });

  it("never answers for a request or notification over the limit, whose id is not one of ours", () => {
    const request = line({ jsonrpc: "2.0", id: 3, method: "sampling/createMessage", params: { text: big } });
    const notification = line({ jsonrpc: "2.0", method: "notifications/message", params: { data: big } });
    const out = read(new BoundedReadBuffer(1_000), request, notification);
    expect(out).toHaveLength(2);
    for (const err of out) expect(err).toMatchObject({ constructor: TooLargeMessageError, response: false });
    expect((out[0] as TooLargeMessageError).bytes).toBe(request.length - 1);
  });

  it("says so of a response over the limit whose id it cannot find", () => {
    const odd = line({ jsonrpc: "2.0", result: { text: big }, id: 4, extra: true });
    expect(read(new BoundedReadBuffer(1_000), odd)).toMatchObject([
      { constructor: TooLargeMessageError, response: true },
    ]);
  });

  it("holds no more than the limit of a message it drops", () => {
    const buffer = new BoundedReadBuffer(1_000);
    buffer.append(Buffer.from('{"result":"'));
    for (let i = 0; i < 100; i++) buffer.append(Buffer.alloc(64 * 1024, 0x61));
    const held = (buffer as unknown as { chunks: Buffer[] }).chunks;
    expect(held).toHaveLength(0);
    expect(read(buffer, '","jsonrpc":"2.0","id":1}\n')).toMatchObject([{ id: 1, error: {} }]);
  });
});
