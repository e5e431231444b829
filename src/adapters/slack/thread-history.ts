import type { ConversationsRepliesResponse, WebClient } from "@slack/web-api";
import type { PriorMessage } from "../../core/inbound.js";
import { log } from "../../log.js";
import { messageFiles, type SlackFile } from "./files.js";
import { fromSlackText } from "./mrkdwn.js";
import type { UserNames } from "./names.js";

/** Thread history reads at most this many pages of `HISTORY_PAGE_SIZE` (the dispatcher trims further). */
export const HISTORY_PAGES = 5;
export const HISTORY_PAGE_SIZE = 200;

/**
 * The thread's messages before this one, for a mention in the middle of a thread, at
 * most `HISTORY_PAGES` pages of them. Slack lists replies oldest first and offers no
 * newest-first order, so a thread longer than that keeps its first 1,000 messages. Their
 * files are named as the message's own are (see messageFiles): a Slack Connect stub by
 * what files.info says of it, one Slack will not describe with why.
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
  // Looked up at once, not one message after the other: each stub is a round trip.
  const described = raw.map((m) => ({
    m,
    files: messageFiles(m.files as SlackFile[] | undefined, deps.token, deps.reads),
  }));
  const out: PriorMessage[] = [];
  for (const { m, files: looking } of described) {
    const fromBot = m.user === me.botUserId || (m.bot_id !== undefined && m.bot_id === me.botId);
    const author = fromBot ? "Switchboard" : m.user ? await nameOf(m.user) : "a bot";
    const text = fromSlackText(m.text ?? "", me.botUserId, people.known);
    const files = (await looking)
      .map((f) => `[file: ${f.name}${f.unreadable ? `; ${f.unreadable}` : ""}]`)
      .join(" ");
    if (text || files) out.push({ author, fromBot, text: [text, files].filter(Boolean).join(" ") });
  }
  return out;
}
