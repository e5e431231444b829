import type { WebClient } from "@slack/web-api";
import { log } from "../../log.js";
import { toMrkdwn } from "./mrkdwn.js";

/** Where a notice goes: the thread, and the one person it is for ("" when nobody is known). */
export interface NoticePlace {
  channel: string;
  threadTs: string;
  user: string;
}

/**
 * Where a sentence for one person is shown: in `channel` when there is one, under
 * `threadTs` when given. Slack shows an ephemeral message in a thread only "if there is
 * already an active thread" (chat.postEphemeral docs), and answers ok for one it shows
 * nowhere, so `threadTs` names only a thread with a reply (a message clicked in a thread,
 * a thread the bot has written in): the root of a message nobody has answered yet would
 * swallow it.
 */
export interface PrivatePlace {
  user: string;
  channel?: string;
  threadTs?: string;
}

/**
 * A notice for one person, shown to them alone (see tellPrivately): in the thread once it
 * has replies (`inThread`), else in the channel. Only a notice with nobody to show it to
 * (a reply rebuilt without its asker) is posted in the thread; true then.
 */
export async function sendNotice(
  web: WebClient,
  place: NoticePlace,
  text: string,
  inThread: boolean,
): Promise<boolean> {
  const { channel, threadTs, user } = place;
  if (!user) {
    await web.chat.postMessage({ channel, thread_ts: threadTs, markdown_text: text });
    return true;
  }
  await tellPrivately(web, { user, channel, ...(inThread ? { threadTs } : {}) }, text);
  return false;
}

/**
 * Shows `text` to one person alone: an ephemeral message in the channel (and thread), or,
 * where Slack refuses that (they are not in the channel, `user_not_in_channel`; the bot
 * is not, `not_in_channel`; a conversation it cannot see, `channel_not_found`; an
 * archived one, `is_archived`), a direct message; a direct message too when there is no
 * channel (a click in a modal or the Home tab). Never the channel itself: what is meant
 * for one person can be theirs alone (an access refusal, their budget, a sign-in link).
 * When neither reaches them it is dropped, with a log line. `mrkdwn`: `text` is classic
 * mrkdwn already (it links a channel, which the conversion from Markdown would escape).
 * `explained`: it says itself why it is not in the channel, so a direct message carries
 * it without a preface.
 */
export async function tellPrivately(
  web: WebClient,
  place: PrivatePlace,
  text: string,
  opts: { mrkdwn?: boolean; explained?: boolean } = {},
): Promise<void> {
  const { channel, threadTs, user } = place;
  const shown = opts.mrkdwn ? text : toMrkdwn(text);
  if (channel) {
    try {
      await web.chat.postEphemeral({
        channel,
        user,
        text: shown,
        ...(threadTs ? { thread_ts: threadTs } : {}),
      });
      return;
    } catch (err) {
      log.debug({ err, channel }, "ephemeral message refused; sending it as a direct message");
    }
  }
  let dm: string | undefined;
  try {
    dm = await directMessage(web, user);
    const where =
      !channel || dm === channel || opts.explained
        ? ""
        : `I could not show you this in <#${channel}>, so here it is.\n`;
    await web.chat.postMessage({ channel: dm, text: `${where}${shown}` });
  } catch (err) {
    // A direct message refused (a person deactivated, say) is opened afresh next time.
    if (dm !== undefined) directMessages.get(web)?.delete(user);
    log.warn(
      { err, channel, user },
      "a message for one person reached them neither privately in the channel nor by direct message; not posted",
    );
  }
}

/** Direct message channels remembered per client (one client per workspace) at most. */
const MAX_DMS = 10_000;
/**
 * Each person's direct message with the bot, by client: conversations.open is Tier 3 (50
 * a minute for the workspace), and Slack answers it with the same channel every time, so
 * it is asked once a person rather than at every private notice.
 */
const directMessages = new WeakMap<WebClient, Map<string, string>>();

async function directMessage(web: WebClient, user: string): Promise<string> {
  let known = directMessages.get(web);
  const dm = known?.get(user);
  if (dm) return dm;
  const opened = await web.conversations.open({ users: user });
  const id = opened.channel?.id;
  if (!id) throw new Error("Slack opened no direct message channel");
  if (!known) {
    known = new Map();
    directMessages.set(web, known);
  }
  if (known.size >= MAX_DMS) {
    const oldest = known.keys().next().value;
    if (oldest !== undefined) known.delete(oldest);
  }
  known.set(user, id);
  return id;
}
