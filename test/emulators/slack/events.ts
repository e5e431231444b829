import { randomUUID } from "node:crypto";
import type { Params } from "./http-util.js";
import {
  APP_ID,
  BOT_USER_ID,
  type EmuChannel,
  type EmuMessage,
  messageJson,
  type SlackState,
  TEAM_ID,
} from "./state.js";

let eventSeq = 0;
/**
 * Slack's event ids are unique across all time; sequential ids alone would repeat in every
 * emulator run, and a store that outlived the last run (Redis shared by tests and benches)
 * would take them for redeliveries and drop them.
 */
const runPrefix = randomUUID().replace(/-/g, "").slice(0, 6).toUpperCase();

/** The `event_callback` wrapper Slack puts around every Events API event. */
export function eventCallback(event: Params): Params {
  eventSeq += 1;
  return {
    token: "verification-token",
    team_id: TEAM_ID,
    api_app_id: APP_ID,
    event,
    type: "event_callback",
    event_id: `Ev${runPrefix}${String(eventSeq).padStart(6, "0")}`,
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [
      {
        enterprise_id: null,
        team_id: TEAM_ID,
        user_id: BOT_USER_ID,
        is_bot: true,
        is_enterprise_install: false,
      },
    ],
    is_ext_shared_channel: false,
    event_context: randomUUID(),
  };
}

function channelType(channel: EmuChannel | undefined): string {
  if (!channel) return "channel";
  return channel.kind === "im" ? "im" : channel.kind === "group" ? "group" : "channel";
}

/** A `message` event for a message someone (or the bot) wrote. */
export function messageEvent(m: EmuMessage, channel: EmuChannel | undefined, baseUrl: string): Params {
  const json = messageJson(m, baseUrl);
  return {
    ...json,
    channel: m.channel,
    event_ts: m.ts,
    channel_type: channelType(channel),
    ...authorTeam(m),
    ...(m.user && !m.bot_id ? { client_msg_id: randomUUID() } : {}),
  };
}

export function appMentionEvent(m: EmuMessage, baseUrl: string): Params {
  const json = messageJson(m, baseUrl);
  delete json.subtype;
  return { ...json, type: "app_mention", channel: m.channel, event_ts: m.ts, ...authorTeam(m) };
}

/**
 * In a Slack Connect channel an event's `team` is the author's workspace, with
 * `user_team` and `source_team`; the envelope's `team_id` stays the receiving one.
 */
function authorTeam(m: EmuMessage): Params {
  return m.team ? { team: m.team, user_team: m.team, source_team: m.team } : { team: TEAM_ID };
}

export function messageChangedEvent(
  m: EmuMessage,
  previous: EmuMessage | undefined,
  channel: EmuChannel | undefined,
  baseUrl: string,
): Params {
  const ts = `${Math.floor(Date.now() / 1000)}.${String(Date.now() % 1000).padStart(6, "0")}`;
  return {
    type: "message",
    subtype: "message_changed",
    hidden: true,
    channel: m.channel,
    channel_type: channelType(channel),
    message: messageJson(m, baseUrl),
    previous_message: previous ? messageJson(previous, baseUrl) : undefined,
    ts,
    event_ts: ts,
  };
}

export function messageDeletedEvent(m: EmuMessage, channel: EmuChannel | undefined, baseUrl: string): Params {
  const ts = `${Math.floor(Date.now() / 1000)}.${String(Date.now() % 1000).padStart(6, "0")}`;
  return {
    type: "message",
    subtype: "message_deleted",
    hidden: true,
    channel: m.channel,
    channel_type: channelType(channel),
    deleted_ts: m.ts,
    previous_message: messageJson(m, baseUrl),
    ts,
    event_ts: ts,
  };
}

export function assistantThreadStartedEvent(
  user: string,
  dm: string,
  threadTs: string,
  contextChannel?: string,
): Params {
  return {
    type: "assistant_thread_started",
    assistant_thread: {
      user_id: user,
      context: contextChannel ? { channel_id: contextChannel, team_id: TEAM_ID, enterprise_id: null } : {},
      channel_id: dm,
      thread_ts: threadTs,
    },
    event_ts: `${Math.floor(Date.now() / 1000)}.000000`,
  };
}

/** The `user` of an interactive payload (block_actions, view_submission). */
export function interactiveUser(state: SlackState, user: string): Params {
  const info = state.user(user);
  return { id: info.id, username: info.name, name: info.name, team_id: TEAM_ID };
}

export function slashCommandPayload(args: {
  command: string;
  text: string;
  user: string;
  userName: string;
  channel: string;
  channelName: string;
  responseUrl: string;
  triggerId: string;
}): Params {
  return {
    token: "verification-token",
    team_id: TEAM_ID,
    team_domain: "emulator",
    channel_id: args.channel,
    channel_name: args.channelName,
    user_id: args.user,
    user_name: args.userName,
    command: args.command,
    // As Slack sends what the person typed: its three control characters escaped.
    text: args.text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"),
    api_app_id: APP_ID,
    is_enterprise_install: "false",
    response_url: args.responseUrl,
    trigger_id: args.triggerId,
  };
}
