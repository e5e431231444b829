import type { WebClient } from "@slack/web-api";
import { log } from "../../log.js";
import type { ReplyAddress } from "../../runtime/contract.js";
import type { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { endingFor } from "../../runtime/stream.js";
import type { AgentSessions } from "./agent-sessions.js";
import { SlackReply } from "./reply.js";
import { readShown, stopStream, ThreadSnapshot } from "./resume.js";

export interface RecoverDeps {
  writes: WebClient;
  reads: WebClient;
  scheduler: WriteScheduler;
  intervalMs: number;
  /** The bot's `bot_id`, to find a message the crashed process began and never recorded. */
  botId?: string;
  /** The workspace's agent sessions: the crashed turn's is left `processing`. */
  sessions?: AgentSessions;
}

/**
 * Ends a reply a crash cut off, in its own last message: an open native stream is
 * stopped with the note (one call), otherwise the message is read back and edited to end
 * with it (a message too full for it continues in one more). Without an address, or
 * when the message is gone, the note is posted in the thread. Rejects when Slack refuses,
 * so the turn stays pending for the next start.
 */
export async function recoverSlackReply(
  deps: RecoverDeps,
  place: { team: string; channel: string; threadTs: string },
  address: ReplyAddress | undefined,
  note: string,
): Promise<void> {
  await endWithNote(deps, place, address, note);
  // Never awaited, as a reply's own end: a session's status has its own budget (Tier 3),
  // and only once the note is there (a refused one leaves the turn for the next start).
  void deps.sessions?.endLeft({ channel: place.channel, threadTs: place.threadTs, user: "" });
}

async function endWithNote(
  deps: RecoverDeps,
  place: { team: string; channel: string; threadTs: string },
  address: ReplyAddress | undefined,
  note: string,
): Promise<void> {
  const { channel, threadTs } = place;
  address = await withUnrecorded(deps, place, address);
  const last = address?.messages.at(-1);
  if (!address || last === undefined) {
    // One post, never retried blindly: a failure leaves the reply pending for the next start.
    await deps.writes.chat.postMessage({ channel, thread_ts: threadTs, markdown_text: note });
    return;
  }
  if (address.streaming) {
    const shown = await readShown(deps.reads, channel, threadTs, last);
    if (shown !== null && (await stopStream(deps.writes, channel, last, endingFor(shown, note)))) {
      await clearStatus(deps.writes, channel, threadTs);
      return;
    }
  }
  const reply = new SlackReply(
    { web: deps.writes, reads: deps.reads, scheduler: deps.scheduler, intervalMs: deps.intervalMs },
    { ...place, user: "", assistant: false },
    // Stopping was tried just now: straight to chat.update.
    { ...address, streaming: false },
  );
  await reply.stream().fail(note);
  await clearStatus(deps.writes, channel, threadTs);
}

/**
 * The address with the native stream its process was starting when it died, if Slack
 * made it (see `ThreadSnapshot.unrecorded`): the note ends that message too. A thread
 * that cannot be read leaves the address as it was (the note is then posted or added as before).
 */
async function withUnrecorded(
  deps: RecoverDeps,
  place: { channel: string; threadTs: string },
  address: ReplyAddress | undefined,
): Promise<ReplyAddress | undefined> {
  if (address?.starting === undefined) return address;
  const { starting: since, ...rest } = address;
  if (!deps.botId) return rest;
  const found = await new ThreadSnapshot(deps.reads, place.channel, place.threadTs).unrecorded(
    deps.botId,
    since,
    rest.messages,
  );
  return found === null ? rest : { ...rest, messages: [...rest.messages, found], streaming: true };
}

/** The "is thinking…" thread status a crashed turn may have left; best effort. */
async function clearStatus(web: WebClient, channel: string, threadTs: string): Promise<void> {
  await web.assistant.threads
    .setStatus({ channel_id: channel, thread_ts: threadTs, status: "" })
    .catch((err: unknown) => log.debug({ err }, "thread status not cleared"));
}
