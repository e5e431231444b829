import type { WebClient } from "@slack/web-api";
import { log } from "../../log.js";
import { WriteDropped } from "../../runtime/scheduler/write-scheduler.js";
import type { AgentSessions, SessionPlace } from "./agent-sessions.js";

/** A thread's title: its agent session's name, and an assistant thread's own title. */
export async function setThreadTitle(
  deps: { web: WebClient; sessions?: AgentSessions | undefined },
  place: SessionPlace & { assistant: boolean },
  title: string,
): Promise<void> {
  if (deps.sessions?.on) await deps.sessions.rename(place, title);
  // Otherwise only assistant threads have a title in Slack; a channel thread is named by its first message.
  if (!place.assistant) return;
  try {
    await deps.web.assistant.threads.setTitle({
      channel_id: place.channel,
      thread_ts: place.threadTs,
      title,
    });
  } catch (err) {
    // Titles come last when the workspace is busy, and may not come at all.
    if (!(err instanceof WriteDropped)) throw err;
    log.debug(
      { channel: place.channel },
      "thread title dropped: the workspace's writes were needed for answers",
    );
  }
}
