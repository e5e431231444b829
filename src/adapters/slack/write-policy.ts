import type { BucketLimit, CallOptions, Lane, WritePolicy } from "../../runtime/scheduler/write-scheduler.js";

/**
 * Slack's write budgets as the scheduler sees them (PLATFORMS.md; Slack's rate-limit docs).
 * Tiers are per app, per workspace, per method; `chat.postMessage` is about one a second
 * per channel with short bursts. The windows carry a margin for requests that arrive
 * closer together than they left.
 */
const MINUTE_MS = 61_000;

/**
 * Known from the first write. Native streams start only while Tier 2 has room for their
 * start and their stop (a stream refused would cost a call). The :eyes: acknowledgement
 * and ephemeral messages (Stop offers, notices) come in bursts when many threads start at
 * once and the first ones are dropped when late: their documented tiers are kept from
 * the start, so two hundred threads at once (or three replicas, each starting afresh)
 * meet no 429 on them. Taking :eyes: away again (Tier 2, paid for as it is added) is known
 * too: three replicas starting optimistic met three times the 429s of one (the first 20
 * of each went out before any had heard of a 429).
 */
const WORKSPACE_PER_MINUTE: Record<string, number> = {
  "chat.startStream": 20,
  "chat.stopStream": 20,
  "chat.postEphemeral": 100,
  "reactions.add": 50,
  "reactions.remove": 20,
  // Reads (the reads client paces them too): thread reads of takeovers and seeds, name lookups,
  // and what another organization's files are (a message's, and its thread's for a seed).
  "conversations.replies": 50,
  "conversations.history": 50,
  "users.info": 100,
  "files.info": 100,
  // Approvers' user groups, read at clicks and Stops (cached; see user-groups.ts): Tier 2 on
  // Slack's method page and in Slack's Java SDK's table of tiers (MethodsRateLimits).
  "usergroups.users.list": 20,
  // The direct message a private notice falls back to (opened once a person; see notices.ts):
  // Tier 3 in Slack's Java SDK's table of tiers (MethodsRateLimits).
  "conversations.open": 50,
  // Agent sessions (Tier 3): many threads starting at once would meet 429s at once. Starts
  // and ends share the minute; starts also have half of it to themselves (see `slackBuckets`).
  "agents.sessions.setStatus": 50,
  "agents.sessions.rename": 50,
};

/**
 * The other documented tiers, assumed only once a 429 shows them: Slack enforces some of
 * them more loosely than documented (busy workspaces see chat.update and appendStream
 * limited per channel), so the scheduler starts optimistic, and a 429 pauses the method
 * for its Retry-After. chat.update and appendStream are limited for the whole workspace
 * only after 429s in two channels, each of which had sent fewer than the workspace's tier
 * in its minute (a channel that sent more met its own limit).
 */
const LEARNED_WORKSPACE_PER_MINUTE: Record<string, number> = {
  "chat.update": 50,
  "chat.appendStream": 100,
  "chat.delete": 50,
  "assistant.threads.setStatus": 600,
  "assistant.threads.setTitle": 50,
  "assistant.threads.setSuggestedPrompts": 50,
  "files.getUploadURLExternal": 100,
  "files.completeUploadExternal": 100,
  "views.open": 100,
  "views.update": 100,
};

/**
 * Buckets only one kind of write spends from (see `BucketLimit.alone`), which keep none of
 * their minute back: adding an :eyes: spends its removal's Tier 2 place, and only agent
 * sessions' statuses spend from theirs (see `slackBuckets`).
 */
const ALONE = new Set(["reactions.remove", "agents.sessions.setStatus"]);

/** Each method's limit for the whole workspace, one object per method, made once. */
function perMinuteLimits(perMinute: Record<string, number>): Map<string, BucketLimit> {
  return new Map(
    Object.entries(perMinute).map(([method, capacity]) => [
      method,
      { capacity, windowMs: MINUTE_MS, ...(ALONE.has(method) && { alone: true }) },
    ]),
  );
}
const WORKSPACE_LIMITS = perMinuteLimits(WORKSPACE_PER_MINUTE);
const LEARNED_WORKSPACE_LIMITS = perMinuteLimits(LEARNED_WORKSPACE_PER_MINUTE);

/** Agent sessions' starts: half of `agents.sessions.setStatus`'s minute, the other half left to their ends. */
const SESSION_STARTS = "slack:agents.sessions.setStatus:starts";
const SESSION_STARTS_LIMIT: BucketLimit = { capacity: 25, windowMs: MINUTE_MS, alone: true };

/** Per channel: known for chat.postMessage (bursts of 3 assumed), learned from a 429 for the others. */
const PER_CHANNEL: Record<string, { known?: BucketLimit; learned: BucketLimit }> = {
  "chat.postMessage": { known: { capacity: 3, windowMs: 3_150 }, learned: { capacity: 3, windowMs: 3_150 } },
  "chat.update": { learned: { capacity: 1, windowMs: 1_050 } },
  "chat.appendStream": { learned: { capacity: 2, windowMs: 1_050 } },
};

/** Calls that only read: the writes client sends them straight; the reads client paces them. */
const READS = /^(auth|users|usergroups|conversations|team|bots|apps)\./;
/**
 * Named like reads, yet called through the writes client: opening a direct message. Sent
 * straight, it would spend its Tier 3 unseen, and a 429 would drop the notice it opens for.
 */
const PACED_AS_WRITES = new Set(["conversations.open"]);

export function isSlackWrite(method: string): boolean {
  return PACED_AS_WRITES.has(method) || !READS.test(method);
}

/**
 * Writes that another must follow, each paying for its follower as it starts (spending
 * from the follower's bucket, which nothing else spends from) so that the follower goes
 * at once and never waits behind the next starts:
 * - a native stream's start for its stop (both Tier 2): a stream is started only when it
 *   can also be stopped at once;
 * - an :eyes: for its removal (Tier 2, 20 a minute, against 50 for adding it): added
 *   faster than they could be taken away, under a steady load they stayed on answered
 *   messages for longer and longer.
 * A session's start pays for its end too, within one method (see `slackBuckets`).
 */
const FOLLOWED_BY: Record<string, string> = {
  "chat.startStream": "chat.stopStream",
  "reactions.add": "reactions.remove",
};
const FOLLOWERS = new Set(Object.values(FOLLOWED_BY));

/** Bucket keys: `slack:{method}` for the workspace, `slack:{method}:{channel}` per channel. */
export function slackBuckets(method: string, params: Record<string, unknown> | undefined): string[] {
  const follower = FOLLOWED_BY[method];
  if (follower) return [`slack:${method}`, `slack:${follower}`];
  if (FOLLOWERS.has(method)) return [`slack:${method}:paid`];
  // A session's start (`processing`) and its end are both `agents.sessions.setStatus`
  // (Tier 3). Starts get half the minute to themselves: sharing all of it, the starts of new
  // answers took the places the ends waited for, and a busy workspace's sessions showed as
  // working, stop button and all, a minute after their answer. Ends still count in the
  // method's minute: replicas sharing a workspace may start a few sessions more than half
  // (each grants from its claim on the minute, and claims can cross), and their ends then
  // wait for the minute instead of meeting 429s (8 of them, three replicas, 200 threads).
  if (method === "agents.sessions.setStatus")
    return params?.status === "processing"
      ? [SESSION_STARTS, "slack:agents.sessions.setStatus"]
      : ["slack:agents.sessions.setStatus"];
  const channel = params?.channel ?? params?.channel_id;
  const wide = `slack:${method}`;
  if (PER_CHANNEL[method] && typeof channel === "string" && channel !== "") {
    const narrow = `${wide}:${channel}`;
    return method === "chat.postMessage" ? [narrow] : [narrow, wide];
  }
  return [wide];
}

export const slackWritePolicy: WritePolicy = {
  limitOf(bucket, learned) {
    if (bucket === SESSION_STARTS) return SESSION_STARTS_LIMIT;
    // `slack:{method}` or `slack:{method}:{channel}`, read without splitting: the
    // scheduler asks at every pick, several times a write.
    const from = bucket.indexOf(":") + 1;
    const to = bucket.indexOf(":", from);
    if (to !== -1) {
      const c = PER_CHANNEL[bucket.slice(from, to)];
      return learned ? c?.learned : c?.known;
    }
    const method = bucket.slice(from);
    return WORKSPACE_LIMITS.get(method) ?? (learned ? LEARNED_WORKSPACE_LIMITS.get(method) : undefined);
  },
};

/**
 * Where a call made outside an answer's writer goes when its caller did not say: the
 * acknowledgement reaction is dropped rather than delayed (it is only worth showing at
 * once), a modal must open within its trigger's 3 s, and sentences people wait for
 * (notices, recovery notes, files) come with final text.
 */
export function slackDefaults(method: string): { lane: Lane } & CallOptions {
  switch (method) {
    case "views.open":
    case "views.update":
    case "chat.startStream":
      return { lane: "first" };
    // Someone who clicked waits for the answer: past this they are told to try again
    // (see user-groups.ts) instead of waiting out a Retry-After of up to a minute.
    case "usergroups.users.list":
      return { lane: "final", dropAfterMs: 10_000 };
    case "chat.stopStream":
      return { lane: "final" };
    case "reactions.add":
      return { lane: "background", dropAfterMs: 1_000 };
    case "assistant.threads.setTitle":
    case "agents.sessions.rename":
      return { lane: "background", dropAfterMs: 30_000 };
    case "reactions.remove":
    case "chat.delete":
    case "chat.appendStream":
    case "assistant.threads.setStatus":
    case "assistant.threads.setSuggestedPrompts":
    case "agents.sessions.setStatus":
      return { lane: "update" };
    default:
      return { lane: "final" };
  }
}
