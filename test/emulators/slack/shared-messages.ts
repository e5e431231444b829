import { messageEvent } from "./events.js";
import type { SlackEmulator } from "./index.js";
import type { EmuMessage } from "./state.js";

/*
 * Messages whose words are not in `text`: an alerting webhook's (Alertmanager, PagerDuty:
 * subtype `bot_message`, text "", everything in legacy `attachments`) and a message a
 * person forwards (its text, author and files in an attachment with `is_share`), as
 * Slack's message events and conversations.replies show them.
 */

/** An incoming webhook named `username` posts `attachments` (and, often, no text) in `channel`. */
export function webhookPost(
  emu: SlackEmulator,
  channel: string,
  attachments: unknown[],
  opts: { text?: string; username?: string; threadTs?: string; blocks?: unknown[] } = {},
): EmuMessage {
  const m = emu.state.addMessage({
    channel,
    bot_id: "B_WEBHOOK",
    subtype: "bot_message",
    username: opts.username ?? "Alertmanager",
    text: opts.text ?? "",
    attachments,
    ...(opts.blocks ? { blocks: opts.blocks } : {}),
    thread_ts: opts.threadTs,
  });
  deliver(emu, m);
  return m;
}

/** What Slack puts in the attachment of a forwarded message. */
export interface Forwarded {
  author: string;
  channelName: string;
  text: string;
  /** The original message's ts. */
  ts?: string;
}

/** `user` forwards `original` into their DM with the bot, with `comment` (Slack's default: none). */
export function forwardToBot(
  emu: SlackEmulator,
  user: string,
  original: Forwarded,
  comment = "",
): EmuMessage {
  const channel = emu.state.dmChannel(user);
  const ts = original.ts ?? "1700000000.000100";
  const m = emu.state.addMessage({
    channel: channel.id,
    user,
    text: comment,
    attachments: [
      {
        is_share: true,
        is_msg_unfurl: true,
        author_name: original.author,
        author_subname: original.author,
        channel_name: original.channelName,
        text: original.text,
        fallback: `[${original.author}] ${original.text}`,
        ts,
        from_url: `https://emulated.slack.com/archives/C1/p${ts.replace(".", "")}`,
        mrkdwn_in: ["text"],
        message_blocks: [
          {
            team: "T1",
            channel: "C1",
            ts,
            message: {
              blocks: [
                {
                  type: "rich_text",
                  elements: [
                    { type: "rich_text_section", elements: [{ type: "text", text: original.text }] },
                  ],
                },
              ],
            },
          },
        ],
      },
    ],
  });
  deliver(emu, m);
  return m;
}

function deliver(emu: SlackEmulator, m: EmuMessage): void {
  emu.deliverEvent(messageEvent(m, emu.state.channels.get(m.channel), emu.baseUrl));
}
