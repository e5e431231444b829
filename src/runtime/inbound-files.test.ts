import { describe, expect, it } from "vitest";
import { configSchema } from "../config.js";
import type { InboundFile } from "../core/inbound.js";
import { prepareAttachments } from "./inbound-files.js";

/** An image the platform says is `size` bytes and hands over as `bytes` bytes. */
function photo(size: number, bytes = size): InboundFile {
  return {
    name: "photo.jpg",
    mimeType: "image/jpeg",
    size,
    fetch: async () => new Uint8Array(bytes),
  };
}

const prepare = (provider: "openai" | "anthropic", model: string, file: InboundFile) =>
  prepareAttachments("look", [file], { config: configSchema.parse({ llm: { provider, model } }), model });

describe("images for the model, held to the provider's limit on one image", () => {
  it("names an Anthropic image whose bytes, not the size the platform reported, pass 5 MiB as base64", async () => {
    const input = await prepare("anthropic", "claude-sonnet-5-5", photo(1_000, 4_000_000));
    expect(input.parts).toEqual([]);
    expect(input.text).toBe(
      "look\n\n[Attached image: photo.jpg (image/jpeg, 1000 B); larger than the 3.75 MB this model accepts for one image, so it is not included]",
    );
  });

  it("does not fetch again, as a takeover does, an Anthropic image it named as too large", async () => {
    const input = await prepareAttachments("look\n\n[Attached image: …]", [photo(4_000_000)], {
      config: configSchema.parse({ llm: { provider: "anthropic", model: "claude-sonnet-5-5" } }),
      model: "claude-sonnet-5-5",
      imagesOnly: true,
    });
    expect(input).toEqual({ text: "look\n\n[Attached image: …]", parts: [] });
  });

  it("still sends OpenAI a 4 MB image, under attachments.maxImageBytes: no limit of its own is documented", async () => {
    const input = await prepare("openai", "gpt-4o", photo(4_000_000));
    expect(input.parts).toHaveLength(1);
    expect(input.text).toBe(
      "look\n\n[Attached image: photo.jpg (image/jpeg, 3.8 MB), shown to you as an image]",
    );
  });
});
