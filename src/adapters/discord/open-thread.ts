import { type Client, DefaultUserAgent, type Message, Routes, ThreadChannel } from "discord.js";
import { RateLimitedError } from "../../runtime/message-ops.js";
import type { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import type { LateThreads } from "./late-threads.js";
import { discordRoute, learnFrom } from "./write-policy.js";

/** discord.js's own step after its thread-creating request: the thread into the client's cache. */
interface ThreadCreateAction {
  actions: { ThreadCreate: { handle(data: unknown): { thread: ThreadChannel | undefined } } };
}

/**
 * Longer than this before Discord takes another thread in a channel, and the answer goes
 * to the channel instead (see `openThread`).
 */
export const THREAD_WAIT_MS = 5_000;

/** Discord's error code for a thread asked for under a message that has one already. */
const THREAD_ALREADY_CREATED = 160004;

/**
 * Opens a thread under a person's message: the request `message.startThread` makes, but
 * sent through the bot's write scheduler instead of discord.js's queue. That queue sends
 * the requests of one route in one channel one after another, each after the last one's
 * answer, so a crowd mentioning the bot in one channel saw its threads open one round
 * trip at a time. The scheduler keeps these requests within the route's bucket as Discord
 * reports it and the bot's global limit, as it does for every write. The thread then
 * enters discord.js's cache by the same step discord.js takes after its own request.
 */
export async function openThread(
  client: Client,
  scheduler: WriteScheduler,
  late: LateThreads,
  message: Message<true>,
  name: string,
): Promise<ThreadChannel> {
  const { api, version } = client.rest.options;
  const url = `${api}/v${version}${Routes.threads(message.channelId, message.id)}`;
  const route = discordRoute("POST", url);
  const init: RequestInit = {
    method: "POST",
    headers: {
      authorization: `Bot ${client.token}`,
      "content-type": "application/json",
      "user-agent": `${DefaultUserAgent} ${client.rest.options.userAgentAppendix}`.trim(),
    },
    body: JSON.stringify({ name }),
  };
  // Discord publishes no limit for threads, and its 429s for them can ask for minutes: a
  // person does not wait that long for the answer to start, so it goes to the channel.
  const threads = route.buckets[0] ?? "";
  const paused = scheduler.waitFor([threads], route.lane);
  if (paused > THREAD_WAIT_MS) throw threadsPaused(paused);
  // discord.js gives its own requests up after `rest.options.timeout` (15 s by default);
  // Node's fetch waits 300 s for headers, and every write of the answer waits behind this
  // thread. One deadline for the wait in line and the request: the person waits for the
  // answer, not for either. The answer then goes to the channel, as it does when the
  // thread is refused; but Discord may have taken the request (see LateThreads).
  const timeoutMs = client.rest.options.timeout;
  const signal = AbortSignal.timeout(timeoutMs);
  let sent = false;
  const data = await scheduler
    .run({
      lane: route.lane,
      buckets: route.buckets,
      signal,
      what: "POST /channels/:id/messages/:id/threads",
      run: async () => {
        sent = true;
        const res = await fetch(url, { ...init, signal });
        const limited = await learnFrom(scheduler, route, res);
        if (limited?.bucket === threads && limited.waitMs > THREAD_WAIT_MS)
          throw threadsPaused(limited.waitMs);
        if (limited)
          throw new RateLimitedError(limited.waitMs, limited.bucket ? { bucket: limited.bucket } : {});
        const body = (await res.json().catch((err: unknown) => {
          if (signal.aborted) throw err;
          return undefined;
        })) as { message?: string; code?: number } | undefined;
        // Opened already, by a replica that died before it stored the message.
        if (body?.code === THREAD_ALREADY_CREATED) return null;
        if (!res.ok) {
          throw new Error(
            `Discord refused the thread (HTTP ${res.status}): ${body?.message ?? "no message"}`,
          );
        }
        return body;
      },
    })
    .catch((err: unknown) => {
      if (!signal.aborted) throw err;
      // The gateway told of the thread while its answer was lost or late: it is there to use.
      const opened = client.channels.cache.get(message.id);
      if (opened?.isThread() && opened.ownerId === client.user?.id) return opened;
      if (sent) late.watch(message.id);
      throw threadTimedOut(timeoutMs, err);
    });
  if (data instanceof ThreadChannel) return data;
  // A thread opened from a message has the message's id.
  if (data === null) return existingThread(client, message.id);
  const thread = (client as unknown as ThreadCreateAction).actions.ThreadCreate.handle(data).thread;
  if (!thread) throw new Error("Discord answered the thread's creation with something that is not a thread");
  return thread;
}

async function existingThread(client: Client, id: string): Promise<ThreadChannel> {
  const channel = await client.channels.fetch(id);
  if (!channel?.isThread()) throw new Error("Discord says the message has a thread, but it is not one");
  return channel;
}

function threadTimedOut(ms: number, cause: unknown): Error {
  return new Error(`Discord did not open the thread within ${Math.ceil(ms / 1000)} s`, { cause });
}

function threadsPaused(ms: number): Error {
  return new Error(`Discord will open no thread in this channel for ${Math.ceil(ms / 1000)} s`);
}
