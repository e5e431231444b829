import Anthropic from "@anthropic-ai/sdk";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { jpeg, png } from "../../support/images.js";
import { LlmEmulator } from "./index.js";

let emu: LlmEmulator;
beforeAll(async () => {
  emu = await LlmEmulator.start();
});
afterEach(() => emu.reset());
afterAll(() => emu.close());

/** A Messages request as it goes over the wire, without an SDK to shape or check it. */
const post = (body: Record<string, unknown>) =>
  fetch(`${emu.anthropicBaseUrl}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": "k", "anthropic-version": "2023-06-01", "content-type": "application/json" },
    body: JSON.stringify({ model: "claude-sonnet-5-5", max_tokens: 100, ...body }),
  });

const refusal = (message: string) => ({
  type: "error",
  error: { type: "invalid_request_error", message },
  request_id: expect.stringMatching(/^req_/),
});

describe("the emulator's Anthropic side refuses what the Messages API refuses", () => {
  it("text blocks that are empty or only whitespace, in a question or an answer, in the API's 400 shape", async () => {
    const conversation = (text: string, role: "user" | "assistant") => ({
      messages: [
        { role: "user", content: [{ type: "text", text: role === "user" ? text : "hi" }] },
        { role: "assistant", content: [{ type: "text", text: role === "assistant" ? text : "hello" }] },
        { role: "user", content: [{ type: "text", text: "again" }] },
      ],
    });
    for (const role of ["user", "assistant"] as const) {
      const blank = await post(conversation("\n\n", role));
      expect(blank.status).toBe(400);
      expect(await blank.json()).toEqual(
        refusal("messages: text content blocks must contain non-whitespace text"),
      );
      const empty = await post(conversation("", role));
      expect(empty.status).toBe(400);
      expect(await empty.json()).toEqual(refusal("messages: text content blocks must be non-empty"));
    }
    expect(emu.requests).toHaveLength(0);
    expect((await post(conversation(" ok ", "assistant"))).status).toBe(200);
  });

  it("tool_result content that is empty or only whitespace, as a string or a text block in it", async () => {
    const withResult = (content: unknown) => ({
      tools: [{ name: "shell__run", input_schema: { type: "object" } }],
      messages: [
        { role: "user", content: "run it" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "shell__run", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content }] },
      ],
    });
    for (const blank of ["\n", " \t", [{ type: "text", text: "\n" }]]) {
      const res = await post(withResult(blank));
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual(
        refusal("messages: text content blocks must contain non-whitespace text"),
      );
    }
    for (const empty of ["", [{ type: "text", text: "" }]]) {
      const res = await post(withResult(empty));
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual(refusal("messages: text content blocks must be non-empty"));
    }
    expect(emu.requests).toHaveLength(0);
    expect((await post(withResult("(no output)"))).status).toBe(200);
    expect((await post(withResult([{ type: "text", text: "done\n" }]))).status).toBe(200);
  });

  it("tool_use and tool_result blocks in a request that defines no tools, in the API's 400 shape", async () => {
    const messages = [
      { role: "user", content: "what is the weather?" },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "weather__get", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "sunny" }] },
    ];
    for (const tools of [undefined, []]) {
      const res = await post({ messages, tools });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual(
        refusal("Requests which include `tool_use` or `tool_result` blocks must define tools."),
      );
    }
    expect(emu.requests).toHaveLength(0);
    const weather = { name: "weather__get", input_schema: { type: "object" } };
    expect((await post({ messages, tools: [weather] })).status).toBe(200);
  });

  it("a base64 image over 5 MiB as encoded, counted on the base64 text, in the API's 400 shape", async () => {
    const MAX = 5 * 1024 * 1024;
    // 3,932,161 file bytes: under 5 MB as a file, 5,242,884 bytes of base64.
    const over = Buffer.alloc((MAX / 4) * 3 + 1, 1).toString("base64");
    const atLimit = Buffer.alloc((MAX / 4) * 3, 1).toString("base64");
    const withImage = (data: string) => ({
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "what is this?" },
            { type: "image", source: { type: "base64", media_type: "image/jpeg", data } },
          ],
        },
      ],
    });
    const res = await post(withImage(over));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual(
      refusal(
        `messages.0.content.1.image.source.base64: image exceeds 5 MB maximum: ${over.length} bytes > ${MAX} bytes`,
      ),
    );
    expect(emu.requests).toHaveLength(0);
    expect((await post(withImage(atLimit))).status).toBe(200);
  });

  it("an image whose media type is not JPEG, PNG, GIF or WebP, through the SDK", async () => {
    const client = new Anthropic({ apiKey: "k", baseURL: emu.anthropicBaseUrl, maxRetries: 0 });
    const source = { type: "base64", media_type: "image/bmp", data: "Qk0=" };
    const err = await client.messages
      .create({
        model: "claude-sonnet-5-5",
        max_tokens: 100,
        messages: [
          { role: "user", content: [{ type: "image", source } as unknown as Anthropic.ImageBlockParam] },
        ],
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as InstanceType<typeof Anthropic.BadRequestError>).error).toEqual(
      refusal(
        "messages.0.content.0.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
      ),
    );
    expect(emu.requests).toHaveLength(0);
  });

  it("a field the API does not know on a text or image block or its source, in the API's 400 shape", async () => {
    const source = { type: "base64", media_type: "image/png", data: pngData(10, 10) };
    const withBlocks = (...content: unknown[]) => ({ messages: [{ role: "user", content }] });
    const text = { type: "text", text: "what is this?" };
    const cases: Array<[unknown[], string]> = [
      [[text, { type: "image", source, label: "a.png" }], "messages.0.content.1.image.label"],
      [[{ ...text, author: "Ann" }], "messages.0.content.0.text.author"],
      [
        [text, { type: "image", source: { ...source, name: "a.png" } }],
        "messages.0.content.1.image.source.base64.name",
      ],
    ];
    for (const [content, path] of cases) {
      const res = await post(withBlocks(...content));
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual(refusal(`${path}: Extra inputs are not permitted`));
    }
    expect(emu.requests).toHaveLength(0);
    const cached = { ...text, cache_control: { type: "ephemeral" } };
    expect((await post(withBlocks(cached, { type: "image", source }))).status).toBe(200);
  });

  it("more than 100 images in one request, in the API's 400 shape", async () => {
    const image = {
      type: "image",
      source: { type: "base64", media_type: "image/png", data: pngData(10, 10) },
    };
    const withImages = (n: number) => ({
      messages: [
        { role: "user", content: [{ type: "text", text: "which is best?" }, ...Array(n).fill(image)] },
      ],
    });
    const res = await post(withImages(101));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual(refusal("Too much media: 0 document pages + 101 images > 100"));
    expect(emu.requests).toHaveLength(0);
    expect((await post(withImages(100))).status).toBe(200);
  });

  it("an image over 8000 pixels on a side, or over 2000 when the request has more than 20", async () => {
    const image = (data: string, media_type = "image/png") => ({
      type: "image",
      source: { type: "base64", media_type, data },
    });
    const ask = (...images: unknown[]) => ({
      messages: [{ role: "user", content: [{ type: "text", text: "look" }, ...images] }],
    });
    const tall = await post(ask(image(jpeg(1440, 8001, 30_000).toString("base64"), "image/jpeg")));
    expect(tall.status).toBe(400);
    expect(await tall.json()).toEqual(
      refusal(
        "messages.0.content.1.image.source.base64.data: At least one of the image dimensions exceed max allowed size: 8000 pixels",
      ),
    );
    expect((await post(ask(image(pngData(8000, 8000))))).status).toBe(200);

    const small = image(pngData(2000, 2000));
    const wide = image(pngData(2001, 100));
    const many = await post(ask(...Array(20).fill(small), wide));
    expect(many.status).toBe(400);
    expect(await many.json()).toEqual(
      refusal(
        "messages.0.content.21.image.source.base64.data: At least one of the image dimensions exceed max allowed size for many-image requests: 2000 pixels",
      ),
    );
    expect((await post(ask(...Array(19).fill(small), wide))).status).toBe(200);
    expect(emu.requests).toHaveLength(2);
  });

  it("a request body over 32 MB with a 413 request_too_large, through the SDK", async () => {
    const client = new Anthropic({ apiKey: "k", baseURL: emu.anthropicBaseUrl, maxRetries: 0 });
    // Seven images of 4.9 MB of base64, each within the 5 MiB an image may have.
    const data = png(64, 64, 3_600_000).toString("base64");
    const ask = (images: number) =>
      client.messages.create({
        model: "claude-sonnet-5-5",
        max_tokens: 100,
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "compare them" },
              ...Array.from({ length: images }, () => ({
                type: "image" as const,
                source: { type: "base64" as const, media_type: "image/png" as const, data },
              })),
            ],
          },
        ],
      });
    const err = await ask(7).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect((err as InstanceType<typeof Anthropic.APIError>).status).toBe(413);
    expect((err as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      error: { type: "request_too_large" },
    });
    expect(emu.requests).toHaveLength(0);
    await expect(ask(6)).resolves.toMatchObject({ type: "message" });
  });
});

function pngData(width: number, height: number): string {
  return png(width, height).toString("base64");
}
