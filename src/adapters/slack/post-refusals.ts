import { ErrorCode } from "@slack/web-api";

/** Slack's word for why a call failed: the `error` of an `ok: false` answer, else the SDK's own code. */
function slackError(err: unknown): { error?: string; sdk?: string; status?: number } {
  const e = err as { code?: unknown; data?: { error?: unknown }; statusCode?: unknown } | undefined;
  return {
    ...(typeof e?.data?.error === "string" ? { error: e.data.error } : {}),
    ...(typeof e?.code === "string" ? { sdk: e.code } : {}),
    ...(typeof e?.statusCode === "number" ? { status: e.statusCode } : {}),
  };
}

/** Slack's errors of a call it could not complete on its side (chat.postMessage's docs, and any method's). */
const SLACK_FAULTS = new Set([
  "internal_error",
  "fatal_error",
  "service_unavailable",
  "request_timeout",
  "team_added_to_org",
  "org_login_required",
]);
const RATE_LIMITED = new Set(["ratelimited", "rate_limited", "message_limit_exceeded"]);
const TOKEN_REFUSED = new Set(["invalid_auth", "not_authed", "account_inactive", "token_revoked"]);
/** The message the bot made was not one Slack takes. */
const MALFORMED = new Set([
  "invalid_blocks",
  "invalid_blocks_format",
  "invalid_arguments",
  "invalid_form_data",
  "invalid_metadata_format",
  "invalid_metadata_schema",
  "no_text",
  "too_many_attachments",
]);
/** A workspace's or an admin's rule against the app posting there. */
const WORKSPACE_RULES = new Set([
  "restricted_action",
  "ekm_access_denied",
  "access_denied",
  "no_permission",
  "team_access_not_granted",
]);

/**
 * Why Slack did not post the question of a slash command's `ask` in `channel`, and what
 * the asker can do, in a sentence for them. Only the errors that mean the bot is not in
 * the conversation ask for an invitation: not_in_channel, and channel_not_found, which
 * Slack answers for a private conversation the bot cannot see (a private channel, a DM
 * between other people). Codes are named where the person may need to pass them on.
 */
export function questionNotPosted(err: unknown, channel: string): string {
  const { error, sdk, status } = slackError(err);
  if (error === "not_in_channel")
    return "I cannot post in this channel: I am not in it. Invite me with `/invite @Switchboard`, then ask again.";
  if (error === "channel_not_found") {
    return channel.startsWith("D")
      ? "I cannot post in a direct message between other people. Ask me in a channel I am in, or in a direct message with me."
      : "I cannot post in this conversation: it is private and I am not in it. Invite me with `/invite @Switchboard` and ask again, or ask me in a channel I am in.";
  }
  if (error === "is_archived")
    return "I cannot post in this channel: it is archived. Ask me in another channel, or unarchive this one first.";
  if (error === "restricted_action_read_only_channel")
    return "I cannot post in this channel: it is read-only. Ask me in another channel.";
  if (error === "restricted_action_thread_only_channel")
    return "I cannot post your question in this channel: it takes replies in threads only. Mention me in a thread here instead.";
  if (error && WORKSPACE_RULES.has(error))
    return `A workspace setting stops me from posting in this channel (Slack said ${error}). Ask me in another channel, or ask a workspace admin to let apps post here.`;
  if (error === "missing_scope")
    return "I am not allowed to post messages in this workspace (Slack said missing_scope). Ask whoever manages the app to reinstall it with the chat:write scope, then ask again.";
  if (error && TOKEN_REFUSED.has(error))
    return `Slack did not accept my token, so I could not post your question (Slack said ${error}). Tell whoever runs me to check SLACK_BOT_TOKEN, then ask again.`;
  if (sdk === ErrorCode.RateLimitedError || (error && RATE_LIMITED.has(error)))
    return "Slack is limiting how fast I may post here, so your question was not posted. Wait a minute, then ask again.";
  if (error === "msg_too_long")
    return "Your question is too long for Slack to post in one message. Shorten it, then ask again.";
  if (error && MALFORMED.has(error))
    return `Slack refused the message I made of your question (Slack said ${error}), which is a fault on my side. Asking in other words may work; please tell whoever runs me.`;
  if (error && SLACK_FAULTS.has(error))
    return `Slack had a problem on its side and did not post your question (Slack said ${error}). Please ask again in a moment.`;
  if (sdk === ErrorCode.HTTPError && status !== undefined && status >= 500)
    return `Slack had a problem on its side and did not post your question (HTTP ${status}). Please ask again in a moment.`;
  if (sdk === ErrorCode.RequestError)
    return "I could not reach Slack to post your question. Please ask again in a moment.";
  if (error)
    return `Slack refused to post your question (Slack said ${error}). Please ask again; if it happens again, tell whoever runs me what Slack said.`;
  return "Something went wrong on my side while I posted your question. Please ask again.";
}
