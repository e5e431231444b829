import { describe, expect, it } from "vitest";
import { jpeg, png } from "../../../test/support/images.js";
import { FunctionHub } from "../../../test/support/scripted.js";
import type { UserPart } from "../../core/messages.js";
import { runToolLoop } from "../loop.js";
import { emulatedProvider, useLlmEmulator } from "./emulator-setup.test-helper.js";
import type { ModelEvent } from "./provider.js";

const emulator = useLlmEmulator();
const MODEL = "claude-haiku-5-5";

const image = (bytes: Buffer, mimeType = "image/png"): UserPart => ({
  type: "image",
  mimeType,
  data: bytes.toString("base64"),
});

/** One request with `parts` through the Anthropic provider: its events, and the blocks the emulator took. */
async function ask(parts: UserPart[]) {
  const provider = emulatedProvider(emulator(), "anthropic", { apiKey: "sk-ant-test-limits" });
  const events: ModelEvent[] = [];
  const request = {
    model: MODEL,
    system: "",
    messages: [{ role: "user" as const, content: "What do these show?", parts }],
    tools: [],
  };
  for await (const event of provider.stream(request, new AbortController().signal)) events.push(event);
  const sent = emulator().requests.at(-1)?.messages[0] as { content: Array<{ type: string; text?: string }> };
  const notice = events.find((e) => e.type === "notice");
  return {
    blocks: sent.content.slice(1),
    images: sent.content.filter((b) => b.type === "image").length,
    notice: notice?.type === "notice" ? notice.text : undefined,
    stop: events.at(-1),
  };
}

describe("an Anthropic request held to the Messages API's limits on images", () => {
  it("sends the first 100 of 120 images and tells the model and the person of the other 20", async () => {
    const { blocks, images, notice, stop } = await ask(Array.from({ length: 120 }, () => image(png(40, 30))));
    expect(stop).toEqual({ type: "stop", reason: "end" });
    expect(images).toBe(100);
    expect(blocks.slice(100)).toEqual(
      Array(20).fill({
        type: "text",
        text: "[An image the person sent is left out here: it came after the first 100, the most one request may carry.]",
      }),
    );
    expect(notice).toBe(
      "(The model did not see 20 of the 120 images sent with this message, because the Anthropic API limits them: 20 came after the first 100, the most it takes in one request. To have them all seen, send fewer or smaller images at a time.)",
    );
  });

  it("leaves out an image over 8000 pixels on a side, a JPEG's size read past its EXIF data", async () => {
    const tall = image(jpeg(1440, 8570, 40_000), "image/jpeg");
    const { blocks, images, notice } = await ask([image(png(800, 600)), tall]);
    expect(images).toBe(1);
    expect(blocks[1]).toEqual({
      type: "text",
      text: "[An image the person sent is left out here: it is 1440x8570 pixels, and none may be larger than 8000 pixels on a side.]",
    });
    expect(notice).toContain("did not see 1 of the 2 images");
    expect(notice).toContain("1 is larger than 8000 pixels on a side, which it refuses");
  });

  it("with more than 20 images, leaves out those over 2000 pixels, keeping as many as the rule allows", async () => {
    const small = () => image(png(1024, 768));
    const big = () => image(png(3000, 2000));
    const many = await ask([...Array.from({ length: 22 }, small), big(), big(), big()]);
    expect(many.images).toBe(22);
    expect(many.notice).toContain(
      "3 are larger than 2000 pixels on a side, which it refuses in a request with more than 20 images",
    );

    // Nineteen small ones leave room for one large one: twenty images may each be 8000 pixels.
    const few = await ask([...Array.from({ length: 19 }, small), big(), big()]);
    expect(few.images).toBe(20);
    expect(few.blocks[19]?.type).toBe("image");
    expect(few.blocks[20]?.text).toMatch(/it is 3000x2000 pixels, and with more than 20 images/);
    expect(few.notice).toContain("did not see 1 of the 21 images");
  });

  it("leaves out the largest images until the request is within 32 MB", async () => {
    // Seven images of about 4.8 MB of base64 each, every one within the 5 MiB an image may be,
    // the last the largest.
    const photos = Array.from({ length: 7 }, (_, i) => image(png(64, 64, 3_600_000 + 3 * i)));
    const { blocks, images, notice } = await ask(photos);
    expect(images).toBe(6);
    expect(blocks[6]).toEqual({
      type: "text",
      text: "[An image the person sent is left out here: with it the request would have been larger than the 32 MB the API accepts.]",
    });
    expect(notice).toContain("1 would have made the request larger than the 32 MB it accepts");
  });

  it("changes nothing and says nothing when the images are within every limit", async () => {
    const { images, notice } = await ask(Array.from({ length: 20 }, () => image(png(4000, 3000))));
    expect(images).toBe(20);
    expect(notice).toBeUndefined();
  });

  it("answers the turn and tells the person after the answer, once, instead of failing it", async () => {
    emulator().enqueue({ text: "A lighthouse at dusk." });
    const gen = runToolLoop(
      {
        provider: emulatedProvider(emulator(), "anthropic", { apiKey: "sk-ant-test-limits" }),
        hub: new FunctionHub({}),
        model: MODEL,
        maxSteps: 5,
        repeatLimit: 3,
        signal: new AbortController().signal,
      },
      {
        system: "sys",
        messages: [
          { role: "user", content: "What is this?", parts: [image(png(800, 600)), image(png(12000, 9000))] },
        ],
        tools: [],
      },
    );
    let shown = "";
    let step = await gen.next();
    while (!step.done) {
      if (step.value.type === "text") shown += step.value.delta;
      step = await gen.next();
    }
    expect(shown).toMatch(
      /^A lighthouse at dusk\.\n\n\(The model did not see 1 of the 2 images sent with this message/,
    );
    expect(shown.match(/did not see/g)).toHaveLength(1);
    expect(step.value.added).toEqual([{ role: "assistant", content: "A lighthouse at dusk." }]);
  });
});
