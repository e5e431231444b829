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
