import type { WebClient } from "@slack/web-api";
import { OncePer } from "../../core/once-per.js";
import { SLACK_PLACE_REFUSALS } from "../../runtime/write-retry.js";
import { tellPrivately } from "./notices.js";

/**
 * The refusal behind `err` (Slack's `error` of an `ok: false` answer), if it is one: the
 * writers wrap what the WebClient threw (a broken stream's cause, say).
 */
export function slackRefusal(err: unknown): string | undefined {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const error = (e as { data?: { error?: unknown } }).data?.error;
    if (typeof error === "string") return SLACK_PLACE_REFUSALS.has(error) ? error : undefined;
  }
  return undefined;
}

/**
 * Why the answer could not be written in `channel`, and what to do, as the asker reads it:
 * classic mrkdwn, so that the channel is a link (nothing else in it needs escaping).
 */
export function unwritableSentence(error: string, channel: string): string {
  const where = `I could not write my answer in <#${channel}>`;
  switch (error) {
    case "is_archived":
      return `${where}: the channel is archived. Ask me again in another channel, or unarchive it first.`;
    case "not_in_channel":
      return `${where}: I am no longer in the channel. Invite me back with \`/invite @Switchboard\`, then ask again.`;
    case "channel_not_found":
      return `${where}: I can no longer see that conversation (it was deleted, or I was removed from it). Invite me back with \`/invite @Switchboard\`, or ask me in a channel I am in.`;
    case "restricted_action_read_only_channel":
      return `${where}: the channel is read-only. Ask me in another channel.`;
    case "restricted_action_thread_only_channel":
    case "restricted_action_non_threadable_channel":
      return `${where}: the channel does not take my replies where I write them (Slack said ${error}). Ask me in another channel, or in a direct message.`;
    case "ekm_access_denied":
      return `${where}: your workspace's encryption keys refused my message (Slack said ekm_access_denied). Ask a workspace admin about Enterprise Key Management, then ask again.`;
    default:
      return `${where}: a workspace setting stops me from posting there (Slack said ${error}). Ask me in another channel, or ask a workspace admin to let apps post there.`;
  }
}

/** Who was told about which channel: once an hour is enough to act on it. */
const told = new OncePer(60 * 60_000);

/**
 * Tells `user` why their answer is not in `place`, where Slack refused it (`err`), as a
 * private message (see tellPrivately: the channel refuses one too when it is archived,
 * then it is a direct message). An outage says nothing a person can act on, and several
 * answers refused in one channel (queued in its thread) tell them once an hour.
 */
export async function tellUnwritable(
  web: WebClient,
  place: { channel: string; threadTs?: string; user: string },
  err: unknown,
): Promise<void> {
  const error = slackRefusal(err);
  if (!error || !place.user || !told.first(`${place.channel}:${place.user}`)) return;
  await tellPrivately(web, place, unwritableSentence(error, place.channel), {
    mrkdwn: true,
    explained: true,
  });
}
