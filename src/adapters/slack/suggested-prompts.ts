import type { WebClient } from "@slack/web-api";
import type { Config } from "../../config.js";
import { log } from "../../log.js";
import type { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";

/** A suggested prompt of the Slack assistant pane: what the button says and the message it sends. */
export interface SuggestedPrompt {
  title: string;
  message: string;
}

/**
 * What the pane offers when neither the config nor a tool server names prompts, so it never opens empty: a
 * question about what the bot can do (it answers with its tools), then everyday asks.
 * Slack shows at most four.
 */
export const DEFAULT_PROMPTS: SuggestedPrompt[] = [
  { title: "What can you do?", message: "What can you help me with, and which tools can you use?" },
  {
    title: "Summarize",
    message: "Summarize the text I paste next: the key points, decisions and open questions.",
  },
  {
    title: "Draft a message",
    message: "Help me draft a short, clear message to my team. Ask me what it is about.",
  },
  { title: "Explain", message: "Explain the next thing I paste in plain words, with one example." },
];

/** The configured prompts; else the tool servers' prompts that need no arguments; else the defaults. */
export function suggestedPrompts(
  configured: SuggestedPrompt[],
  fromServers: SuggestedPrompt[] = [],
): SuggestedPrompt[] {
  if (configured.length > 0) return configured.slice(0, 4);
  return (fromServers.length > 0 ? fromServers : DEFAULT_PROMPTS).slice(0, 4);
}

export interface PromptDeps {
  writes: WebClient;
  scheduler: WriteScheduler;
  config: Config;
  /** The tool servers' prompts that need no arguments (see AdapterDeps.promptSuggestions). */
  promptSuggestions?: () => SuggestedPrompt[];
}

/** Prompts for an opened Messages tab shown later than this are not worth the budget: they are for the moment it opens. */
const TAB_PROMPTS_LATE_MS = 3_000;

/**
 * Sets the pane's suggested prompts: in a new assistant thread (`threadTs`), or in the DM
 * itself when a person opens an agent app's Messages tab (`app_home_opened`, which an
 * `agent_view` app gets instead of `assistant_thread_started`). A tab opens again and
 * again: its prompts go behind every answer's writes, and not at all when late.
 */
export async function offerPrompts(deps: PromptDeps, channel: string, threadTs?: string): Promise<void> {
  const prompts = suggestedPrompts(deps.config.slack.suggestedPrompts, deps.promptSuggestions?.() ?? []);
  const set = () =>
    deps.writes.assistant.threads.setSuggestedPrompts({
      channel_id: channel,
      ...(threadTs ? { thread_ts: threadTs } : {}),
      prompts,
    });
  try {
    await (threadTs ? set() : deps.scheduler.as("background", set, { dropAfterMs: TAB_PROMPTS_LATE_MS }));
  } catch (err) {
    log.warn({ err, channel }, "suggested prompts not set");
  }
}
