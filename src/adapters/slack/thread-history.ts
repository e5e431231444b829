import type { ConversationsRepliesResponse, WebClient } from "@slack/web-api";
import type { PriorMessage } from "../../core/inbound.js";
import { log } from "../../log.js";
import { describeStub, isStub, messageFiles, type SlackFile } from "./files.js";
import { lookUpMentions, messageFileList, type SlackMessageParts, slackMarkup } from "./message-text.js";
import { fromSlackText } from "./mrkdwn.js";
import type { UserNames } from "./names.js";

/** Thread history reads at most this many pages of `HISTORY_PAGE_SIZE` (the dispatcher trims further). */
export const HISTORY_PAGES = 5;
export const HISTORY_PAGE_SIZE = 200;

/**
 * Files another organization shared earlier in the thread (Slack Connect stubs) described
 * with files.info: the latest this many. Each is a call of its own, made before the model
 * is asked, and files.info is Tier 4 (about 100 a minute for the whole workspace, shared
 * with the stubs on every message the bot answers): a thread holding hundreds of them
 * would hold the first answer for minutes and spend everyone's minute. The latest are
 * likelier to be what the question is about; the others are named by their id only.
 */
export const HISTORY_FILE_LOOKUPS = 20;
/** Lookups in flight at once: the 20 take a few round trips, without a burst of them on the workspace's tier. */
export const HISTORY_LOOKUPS_AT_ONCE = 4;
/** People mentioned by id alone in the thread's messages looked up, at most (users.info is Tier 4). */
const HISTORY_MENTION_LOOKUPS = 20;
/** What the model is told of a stub past HISTORY_FILE_LOOKUPS. */
export const NOT_LOOKED_UP =
  "an earlier file from another organization, not looked up, so its name is not known";

/**
 * The thread's messages before this one, for a mention in the middle of a thread, at
 * most `HISTORY_PAGES` pages of them. Slack lists replies oldest first and offers no
 * newest-first order, so a thread longer than that keeps its first 1,000 messages. Each
 * is read with its attachments and blocks (see slackMarkup: an alert bot's root message
 * has nothing else), its mentions of people by id named when Slack says soon. Their
 * files are named as the message's own are (see messageFiles): a Slack Connect stub by
 * what files.info says of it, one Slack will not describe with why, and those past the
 * latest HISTORY_FILE_LOOKUPS by their id.
 */
export async function threadHistory(
  deps: { identity: () => { botUserId: string; botId?: string }; reads: WebClient; token: string },
  people: UserNames,
  { channel, ts, threadRoot }: { channel: string; ts: string; threadRoot: string },
): Promise<PriorMessage[]> {
  const me = deps.identity();
  const raw: NonNullable<ConversationsRepliesResponse["messages"]> = [];
  let cursor: string | undefined;
  for (let page = 0; page < HISTORY_PAGES; page++) {
    const res = await deps.reads.conversations.replies({
      channel,
      ts: threadRoot,
      // Nothing said after the mention is needed.
      latest: ts,
      limit: HISTORY_PAGE_SIZE,
      cursor,
    });
    raw.push(...(res.messages ?? []).filter((m) => m.ts && Number(m.ts) < Number(ts)));
    cursor = res.response_metadata?.next_cursor || undefined;
    if (!cursor) break;
  }
  if (cursor) log.info({ channel, threadRoot, read: raw.length }, "long thread: history capped");
  // One lookup per author, also for those users.info does not know (not cached by userName).
  const names = new Map<string, Promise<string>>();
  const nameOf = (id: string) => {
    let name = names.get(id);
    if (!name) {
      name = people.of(id);
      names.set(id, name);
    }
    return name;
  };
  const isMine = (m: (typeof raw)[number]) =>
    m.user === me.botUserId || (m.bot_id !== undefined && m.bot_id === me.botId);
  // The bot's own answers are read as their text: their blocks are the same answer again.
  const read = raw.map((m) => ({
    m,
    fromBot: isMine(m),
    markup: isMine(m) ? (m.text ?? "") : slackMarkup(m as SlackMessageParts),
    fileList: messageFileList(m as SlackMessageParts),
  }));
  const mentions = lookUpMentions(
    people,
    read.map((r) => r.markup),
    me.botUserId,
    HISTORY_MENTION_LOOKUPS,
  );
  const stubs = read.flatMap((r) => r.fileList.filter(isStub));
  const looked = new Set(stubs.slice(-HISTORY_FILE_LOOKUPS));
  const inTurn = atMost(HISTORY_LOOKUPS_AT_ONCE);
  const describe = (stub: SlackFile) =>
    looked.has(stub) ? inTurn(() => describeStub(deps.reads, stub)) : Promise.resolve(NOT_LOOKED_UP);
  // Every message's files asked for at once (the lookups within their bound): each stub is a round trip.
  const described = read.map((r) => ({
    ...r,
    files: messageFiles(r.fileList, deps.token, deps.reads, describe),
  }));
  await mentions;
  const out: PriorMessage[] = [];
  for (const { m, fromBot, markup, files: looking } of described) {
    const author = fromBot
      ? "Switchboard"
      : m.user
        ? await nameOf(m.user)
        : m.bot_profile?.name || (m as { username?: string }).username || "a bot";
    const text = fromSlackText(markup, me.botUserId, people.known);
    const files = (await looking)
      .map((f) => `[file: ${f.name}${f.unreadable ? `; ${f.unreadable}` : ""}]`)
      .join(" ");
    if (text || files) out.push({ author, fromBot, text: [text, files].filter(Boolean).join(" ") });
  }
  return out;
}

/** Runs the tasks it is given at most `n` at a time, the others in the order given as places free up. */
function atMost(n: number): <T>(task: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (task) => {
    // A place freed is handed straight to the next waiting task, so none can take it in between.
    if (running < n) running += 1;
    else await new Promise<void>((go) => waiting.push(go));
    try {
      return await task();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running -= 1;
    }
  };
}
