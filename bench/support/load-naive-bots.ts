/**
 * The naive bot's platform wiring (see naive.ts for its brain): Slack through Socket Mode
 * and a WebClient, Discord through the discord.js gateway and raw REST calls. It lives in
 * a module of its own, importing neither the app nor the emulators, so that the load
 * benchmark can run it as its own process and measure the memory of a naive bot, not of
 * the whole test kit; slack.ts and discord.ts start the same bot in the benchmark's process.
 */
import { LogLevel } from "@slack/logger";
import { SocketModeClient } from "@slack/socket-mode";
import { ErrorCode, WebClient } from "@slack/web-api";
import { Client, Events, GatewayIntentBits, type Message, Routes } from "discord.js";
import { NaiveBrain, retryOn429 } from "./naive.js";

export interface RunningNaiveBot {
  stop(): Promise<void>;
}

/** Where a naive Slack bot connects: the emulator's Web API and its tokens. */
export interface NaiveSlackTarget {
  apiUrl: string;
  botToken: string;
  appToken: string;
}

/** Where a naive Discord bot connects: the emulator's REST API (and through it, its gateway). */
export interface NaiveDiscordTarget {
  apiUrl: string;
  token: string;
}

type Params = Record<string, unknown>;

const str = (p: Params, k: string): string | undefined =>
  typeof p[k] === "string" ? (p[k] as string) : undefined;

function retryAfterMs(err: unknown): number | undefined {
  const e = err as { code?: string; retryAfter?: number };
  return e?.code === ErrorCode.RateLimitedError ? (e.retryAfter ?? 1) * 1000 : undefined;
}

/** Answers every app_mention in its thread: post the first text, edit at most once a second, final edit. */
export async function startNaiveSlackBot(
  target: NaiveSlackTarget,
  openaiBaseUrl: string,
): Promise<RunningNaiveBot> {
  const brain = await NaiveBrain.start(openaiBaseUrl);
  const web = new WebClient(target.botToken, {
    slackApiUrl: target.apiUrl,
    logLevel: LogLevel.ERROR,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
  });
  const socket = new SocketModeClient({
    appToken: target.appToken,
    clientOptions: { slackApiUrl: target.apiUrl },
    logLevel: LogLevel.ERROR,
  });
  socket.on("app_mention", async ({ event, ack }: { event: Params; ack: () => Promise<void> }) => {
    await ack();
    const channel = str(event, "channel") ?? "";
    const threadTs = str(event, "thread_ts") ?? str(event, "ts") ?? "";
    const text = (str(event, "text") ?? "").replace(/<@[A-Z0-9_]+>\s*/g, "");
    await brain
      .answer(text, {
        post: async (t) => {
          const res = await retryOn429(
            () => web.chat.postMessage({ channel, thread_ts: threadTs, text: t }),
            retryAfterMs,
          );
          return res.ts ?? "";
        },
        edit: async (ts, t) => {
          await retryOn429(() => web.chat.update({ channel, ts, text: t }), retryAfterMs);
        },
      })
      .catch((err: unknown) => console.error("naive slack bot:", err));
  });
  await socket.start();
  return {
    async stop() {
      await socket.disconnect();
      await brain.close();
    },
  };
}

/** Opens a thread on every top-level mention and answers in it the same way. */
export async function startNaiveDiscordBot(
  target: NaiveDiscordTarget,
  openaiBaseUrl: string,
): Promise<RunningNaiveBot> {
  const brain = await NaiveBrain.start(openaiBaseUrl);
  const client = new Client({
    intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.MessageContent],
    rest: {
      api: target.apiUrl,
      // As Switchboard does: @slack/socket-mode replaces undici's global dispatcher.
      makeRequest: (url, init) => fetch(url, init as RequestInit),
      // Only 429s are retried (@discordjs/rest waits them out); nothing else is repeated.
      retries: 0,
    },
  });
  const rest = client.rest;
  const answer = async (message: Message) => {
    const text = message.content.replace(/<@!?\d+>\s*/g, "");
    const thread = (await rest.post(Routes.threads(message.channelId, message.id), {
      body: { name: text.slice(0, 90) || "Question" },
    })) as { id: string };
    await brain.answer(text, {
      post: async (content) => {
        const sent = (await rest.post(Routes.channelMessages(thread.id), { body: { content } })) as {
          id: string;
        };
        return sent.id;
      },
      edit: async (id, content) => {
        await rest.patch(Routes.channelMessage(thread.id, id), { body: { content } });
      },
    });
  };
  client.on(Events.MessageCreate, (message) => {
    const me = client.user?.id;
    if (!me || message.author.id === me || !message.mentions.users.has(me) || message.channel.isThread())
      return;
    answer(message).catch((err: unknown) => console.error("naive discord bot:", err));
  });
  const ready = new Promise<void>((resolve) => client.once(Events.ClientReady, () => resolve()));
  await client.login(target.token);
  await ready;
  return {
    async stop() {
      await client.destroy();
      await brain.close();
    },
  };
}
