import { describe, expect, it } from "vitest";
import { jpeg, png } from "../../test/support/images.js";
import { emulatedProvider, useLlmEmulator } from "../agent/providers/emulator-setup.test-helper.js";
import { configSchema } from "../config.js";
import type { InboundFile } from "../core/inbound.js";
import { prepareAttachments } from "./inbound-files.js";

const emulator = useLlmEmulator();
const MODEL = "claude-haiku-5-5";
const config = configSchema.parse({ llm: { provider: "anthropic", model: MODEL } });

function file(name: string, mimeType: string, bytes: Buffer): InboundFile {
  return { name, mimeType, size: bytes.length, fetch: async () => new Uint8Array(bytes) };
}

/** What the Anthropic API is sent for a message with these files: its text blocks and its image count. */
async function sentFor(files: InboundFile[], asked?: string) {
  const input = await prepareAttachments(asked ?? "What do these show?", files, {
    config,
    model: MODEL,
    ...(asked ? { imagesOnly: true } : {}),
  });
  const provider = emulatedProvider(emulator(), "anthropic", { apiKey: "sk-ant-test-notes" });
  const request = {
    model: MODEL,
    system: "",
    messages: [{ role: "user" as const, content: input.text, parts: input.parts }],
    tools: [],
  };
  for await (const _ of provider.stream(request, new AbortController().signal)) {
    // drained for the request it makes
  }
  const sent = emulator().requests.at(-1)?.messages[0] as { content: Array<{ type: string; text?: string }> };
  return {
    stored: input.text,
    texts: sent.content.filter((b) => b.type === "text").map((b) => b.text ?? ""),
    images: sent.content.filter((b) => b.type === "image").length,
  };
}

const TALL_NOTE =
  "[Attached image: tall.jpg (image/jpeg, 45 B); not shown to you, because it is 1440x8570 pixels, and none may be larger than 8000 pixels on a side]";

describe("the note on an image left out of an Anthropic request for the API's limits", () => {
  const files = () => [
    file("wide.png", "image/png", png(800, 600)),
    file("tall.jpg", "image/jpeg", jpeg(1440, 8570)),
  ];

  it("is one note that says it was not shown and why, in place of the note that said it was", async () => {
    const { stored, texts, images } = await sentFor(files());
    expect(images).toBe(1);
    expect(texts).toEqual([
      "What do these show?\n\n" +
        "[Attached image: wide.png (image/png, 33 B), shown to you as an image]\n\n" +
        TALL_NOTE,
    ]);
    // The session keeps the message as the person's files made it.
    expect(stored).toContain("[Attached image: tall.jpg (image/jpeg, 45 B), shown to you as an image]");
  });

  it("is the same when a takeover asks again with the stored text and only the images fetched", async () => {
    const first = await sentFor(files());
    const again = await sentFor(files(), first.stored);
    expect(again.texts).toEqual(first.texts);
    expect(again.images).toBe(1);
  });

  it("is rewritten for each of several left out among kept ones, the kept ones' notes untouched", async () => {
    // 22 images: with more than 20, none over 2000 pixels but as many as keep the count at 20.
    const big = (n: number) => file(`big${n}.png`, "image/png", png(3000, 2000));
    const small = (n: number) => file(`small${n}.png`, "image/png", png(1024, 768));
    const files = [big(0), ...[1, 2, 3, 4, 5, 6, 7, 8, 9].map(small), big(1)];
    files.push(...[10, 11, 12, 13, 14, 15, 16, 17, 18, 19].map(small), big(2));
    const { texts, images } = await sentFor(files);
    expect(images).toBe(20);
    expect(texts).toHaveLength(1);
    const why =
      "because it is 3000x2000 pixels, and with more than 20 images in one request none may be larger than 2000 pixels on a side";
    expect(texts[0]).toContain("[Attached image: big0.png (image/png, 33 B), shown to you as an image]");
    for (const n of [1, 2]) {
      expect(texts[0]).toContain(`[Attached image: big${n}.png (image/png, 33 B); not shown to you, ${why}]`);
      expect(texts[0]).not.toContain(`big${n}.png (image/png, 33 B), shown`);
    }
    expect(texts[0]?.match(/shown to you as an image/g)).toHaveLength(20);
  });

  it("is rewritten for the largest images left out to keep the request within 32 MB", async () => {
    // Seven images of about 4.8 MB of base64 each, the last the largest.
    const files = Array.from({ length: 7 }, (_, i) =>
      file(`photo${i}.png`, "image/png", png(64, 64, 3_600_000 + 3 * i)),
    );
    const { texts, images } = await sentFor(files);
    expect(images).toBe(6);
    expect(texts[0]).toContain(
      "[Attached image: photo6.png (image/png, 3.4 MB); not shown to you, because with it the request would have been larger than the 32 MB the API accepts]",
    );
    expect(texts[0]?.match(/shown to you as an image/g)).toHaveLength(6);
  });
});
