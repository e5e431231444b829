import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, startApp } from "../../src/app.js";
import { LlmEmulator, type RecordedRequest } from "../emulators/llm/index.js";
import { SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";
import { isTitleRequest } from "../support/llm-text.js";

/** A 1x1 PNG (68 bytes). */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
  "base64",
);
/** Over the 200-byte image limit the vision bot is given below. */
const BIG_PNG = Buffer.concat([PNG, Buffer.alloc(400, 7)]);

type Part = {
  type: string;
  text?: string;
  image_url?: { url: string };
  source?: { type: string; media_type: string; data: string };
};
type Message = { role: string; content: string | Part[] };

let llm: LlmEmulator;
let slack: SlackEmulator;

beforeAll(async () => {
  llm = await LlmEmulator.start({
    responder: (req) => (isTitleRequest(req) ? { text: "Attachments" } : { text: "Got it." }),
  });
  slack = await SlackEmulator.start();
});

afterAll(async () => {
  await slack?.stop();
  await llm?.close();
});

/** The real app on Slack with `model` as its chat model and no MCP servers. */
function useBot(
  model: string,
  yaml = "",
  protocol: "openai" | "anthropic" = "openai",
): () => App | undefined {
  let app: App | undefined;
  let dir: string;
  beforeAll(async () => {
    dir = scratchConfig(yaml);
    const env = { ...appEnv({ dir, llm, slack, protocol }), LLM_MODEL: model };
    app = await startApp({ env, cwd: dir });
  });
  afterAll(async () => {
    await app?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return () => app;
}

/** Mentions the bot with `files` and returns the last user message of the model request it made. */
async function ask(
  text: string,
  files: { name: string; mimetype: string; bytes: Uint8Array }[],
  user = "U_ALICE",
) {
  const before = llm.requests.length;
  const m = slack.mention("C1", user, text, { files });
  await waitFor(() => slack.botReplies("C1", m.ts).some((r) => r.text === "Got it."), { timeoutMs: 20_000 });
  const req = llm.requests.slice(before).find((r) => !isTitleRequest(r));
  if (!req) throw new Error(`no model request for "${text}"`);
  return lastUser(req);
}

function lastUser(req: RecordedRequest): Message {
  const user = (req.messages as Message[]).filter((m) => m.role === "user").at(-1);
  if (!user) throw new Error("the request has no user message");
  return user;
}

describe("files attached to a message, for a model that sees images (gpt-4o)", () => {
  const bot = useBot("gpt-4o", "attachments:\n  maxImageBytes: 200\n");

  it("fetches a file another process stored from its private URL, with this process's bot token", async () => {
    const m = slack.mention("C1", "U_ALICE", "keep this", {
      files: [{ name: "todo.txt", mimetype: "text/plain", bytes: Buffer.from("ship it") }],
    });
    const kept = slack.state.messages.find((x) => x.ts === m.ts)?.files[0];
    if (!kept) throw new Error("the emulator kept no file");
    const stored = {
      name: "todo.txt",
      mimeType: "text/plain",
      size: 7,
      url: `${slack.baseUrl}/files/${kept.id}/todo.txt?download=1`,
    };
    const adapter = bot()?.adapters.find((a) => a.platform === "slack");
    const file = adapter?.fileFrom?.(stored);
    // The emulator, like Slack, answers a request without the token with its sign-in page.
    expect(Buffer.from((await file?.fetch()) ?? []).toString()).toBe("ship it");
    await waitFor(() => slack.botReplies("C1", m.ts).some((r) => r.text === "Got it."), {
      timeoutMs: 20_000,
    });
  });

  it("sends the image as an image part, with a line naming it", async () => {
    const sent = await ask("what is in this chart?", [
      { name: "chart.png", mimetype: "image/png", bytes: PNG },
    ]);
    expect(sent.content).toEqual([
      {
        type: "text",
        text: "[alice] what is in this chart?\n\n[Attached image: chart.png (image/png, 68 B), shown to you as an image]",
      },
      { type: "image_url", image_url: { url: `data:image/png;base64,${PNG.toString("base64")}` } },
    ]);
  });

  it("leaves out an image over attachments.maxImageBytes and says why", async () => {
    const sent = await ask("and this photo?", [{ name: "photo.png", mimetype: "image/png", bytes: BIG_PNG }]);
    expect(sent.content).toBe(
      "[alice] and this photo?\n\n[Attached file: photo.png (image/png, 468 B); too large to read, so its content is not included]",
    );
  });

  it("puts a text file inline and names a file it cannot read", async () => {
    const sent = await ask("read these", [
      { name: "notes.txt", mimetype: "text/plain", bytes: Buffer.from("remember the milk") },
      { name: "backup.zip", mimetype: "application/zip", bytes: Buffer.from("PK\x03\x04") },
    ]);
    expect(sent.content).toBe(
      [
        "[alice] read these",
        "[Attached file: notes.txt (text/plain, 17 B)]\n```\nremember the milk\n```",
        "[Attached file: backup.zip (application/zip, 4 B); a type I cannot read, so its content is not included]",
      ].join("\n\n"),
    );
  });
});

describe("files shared from another organization in a Slack Connect channel", () => {
  useBot("gpt-4o");
  const NOTES = [{ name: "plan.txt", mimetype: "text/plain", bytes: Buffer.from("launch on friday") }];
  const infoCalls = () => slack.api.calls.filter((c) => c.method === "files.info");

  it("reads a file Slack sends as a stub, after asking files.info what it is", async () => {
    slack.externalUser("U_EXT", "T_OTHER");
    const asked = infoCalls().length;
    const sent = await ask("what does our plan say?", NOTES, "U_EXT");
    expect(sent.content).toBe(
      "[ext] what does our plan say?\n\n[Attached file: plan.txt (text/plain, 16 B)]\n```\nlaunch on friday\n```",
    );
    expect(infoCalls().slice(asked)).toHaveLength(1);
  });

  it("tells the model a file could not be read when files.info is refused, instead of dropping it", async () => {
    slack.externalUser("U_EXT2", "T_OTHER");
    slack.api.refuse("files.info", "file_not_found");
    try {
      const sent = await ask("and this one?", NOTES, "U_EXT2");
      expect(sent.content).toMatch(
        /^\[ext2\] and this one\?\n\n\[Attached file: F\w+; Slack would not say what this file is \(file_not_found\), so it could not be read\]$/,
      );
    } finally {
      slack.api.allow("files.info");
    }
  });
});

describe("files attached to a message, for a model without vision (llama3.1:8b)", () => {
  useBot("llama3.1:8b");

  it("sends no image, and a sentence that says the model cannot see it", async () => {
    const sent = await ask("what is in this chart?", [
      { name: "chart.png", mimetype: "image/png", bytes: PNG },
    ]);
    expect(sent.content).toBe(
      "[alice] what is in this chart?\n\n[Attached image: chart.png (image/png, 68 B); this model cannot see images, so it is not included]",
    );
  });
});

describe("images attached to a message, for Anthropic (claude-sonnet-5-5)", () => {
  useBot("claude-sonnet-5-5", "", "anthropic");
  /** A PNG of `bytes` bytes: under the 5,000,000-byte attachments.maxImageBytes by default. */
  const png = (bytes: number) => Buffer.concat([PNG, Buffer.alloc(bytes - PNG.length, 7)]);

  it("names a phone-sized photo whose base64 would pass the API's 5 MiB, instead of failing the turn", async () => {
    // 4,000,000 bytes are 5,333,336 bytes of base64: the API refuses that with a 400.
    const sent = await ask("what is in this photo?", [
      { name: "photo.png", mimetype: "image/png", bytes: png(4_000_000) },
    ]);
    expect(sent.content).toEqual([
      {
        type: "text",
        text: "[alice] what is in this photo?\n\n[Attached image: photo.png (image/png, 3.8 MB); larger than the 3.75 MB this model accepts for one image, so it is not included]",
      },
    ]);
  });

  it("sends an image whose base64 stays within 5 MiB as an image block", async () => {
    const bytes = png(3_900_000);
    const sent = await ask("and this one?", [{ name: "small.png", mimetype: "image/png", bytes }]);
    expect(sent.content).toEqual([
      {
        type: "text",
        text: "[alice] and this one?\n\n[Attached image: small.png (image/png, 3.7 MB), shown to you as an image]",
      },
      { type: "image", source: { type: "base64", media_type: "image/png", data: bytes.toString("base64") } },
    ]);
  });
});
