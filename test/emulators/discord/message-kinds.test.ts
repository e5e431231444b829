import {
  Client,
  Events,
  GatewayIntentBits,
  type Message,
  MessageReferenceType,
  MessageType,
  Partials,
} from "discord.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DiscordEmulator, waitFor } from "./index.js";

let emulator: DiscordEmulator;
let client: Client;
let messages: Message[];

beforeEach(async () => {
  emulator = await DiscordEmulator.start();
  messages = [];
  client = new Client({
    intents: [
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildMessages,
      GatewayIntentBits.DirectMessages,
      GatewayIntentBits.MessageContent,
    ],
    partials: [Partials.Channel],
    rest: { api: emulator.apiUrl },
  });
  client.on(Events.MessageCreate, (m) => messages.push(m));
  const ready = new Promise<void>((resolve) => client.once(Events.ClientReady, () => resolve()));
  await client.login(emulator.token);
  await ready;
});

afterEach(async () => {
  await client.destroy();
  await emulator.stop();
});

const received = (id: string) => waitFor(() => messages.find((m) => m.id === id));

describe("Discord emulator: messages without text of their own", () => {
  it("sends a sticker and a poll as messages with empty content, as discord.js reads them", async () => {
    const s = emulator.state;
    const sticker = await received(emulator.dm(s.alice.id, "", { carries: { stickers: ["wave"] } }).id);
    expect(sticker.content).toBe("");
    expect([...sticker.stickers.values()].map((x) => x.name)).toEqual(["wave"]);
    const poll = await received(
      emulator.userMessage(s.general, "", {
        carries: { poll: { question: "Lunch?", answers: ["yes", "no"] } },
      }).id,
    );
    expect(poll.content).toBe("");
    expect(poll.poll?.question.text).toBe("Lunch?");
    expect([...(poll.poll?.answers.values() ?? [])].map((a) => a.text)).toEqual(["yes", "no"]);
  });

  it("sends a forward with no content of its own, the original's text and files in its snapshot", async () => {
    const s = emulator.state;
    const original = emulator.userMessage(s.general, "The build is red since 10:00.", {
      attachments: [{ filename: "log.txt", contentType: "text/plain", data: Buffer.from("FAIL") }],
    });
    const forward = await received(emulator.dm(s.alice.id, "", { carries: { forwarded: original } }).id);
    expect(forward.content).toBe("");
    expect(forward.attachments.size).toBe(0);
    expect(forward.reference).toMatchObject({ type: MessageReferenceType.Forward, messageId: original.id });
    const snapshot = forward.messageSnapshots.first();
    expect(snapshot?.content).toBe("The build is red since 10:00.");
    expect([...(snapshot?.attachments.values() ?? [])].map((a) => a.name)).toEqual(["log.txt"]);
  });
});

describe("Discord emulator: replies", () => {
  it("sends a reply with its reference and the message replied to, pinging its author unless turned off", async () => {
    const s = emulator.state;
    const bobs = emulator.userMessage(s.general, "how do I rotate the keys?", { author: s.bob });
    const pinging = await received(
      emulator.userMessage(s.general, "same question", { carries: { replyTo: bobs.id } }).id,
    );
    expect(pinging.type).toBe(MessageType.Reply);
    expect(pinging.reference).toMatchObject({ type: MessageReferenceType.Default, messageId: bobs.id });
    expect(pinging.mentions.repliedUser?.id).toBe(s.bob.id);
    expect(pinging.mentions.users.has(s.bob.id)).toBe(true);
    // discord.js has the message replied to from the event itself: no request is needed.
    const before = emulator.requests.length;
    expect((await pinging.fetchReference()).content).toBe("how do I rotate the keys?");
    expect(emulator.requests.length).toBe(before);
    const quiet = await received(
      emulator.userMessage(s.general, "me too", { carries: { replyTo: bobs.id, pingReplied: false } }).id,
    );
    expect(quiet.mentions.repliedUser?.id).toBe(s.bob.id);
    expect(quiet.mentions.users.has(s.bob.id)).toBe(false);
  });
});
