import { countTokens, modelLimits } from "../agent/context.js";
import type { Config } from "../config.js";
import type { PriorMessage } from "../core/inbound.js";
import { log } from "../log.js";
import type { Session } from "../store/sessions.js";

/** A mention mid-thread: start the session with what was said before, newest first until a quarter of the window. */
export async function seedFromThread(
  session: Session,
  history: () => Promise<PriorMessage[]>,
  config: Config,
  model: string,
): Promise<void> {
  let prior: PriorMessage[];
  try {
    prior = await history();
  } catch (err) {
    log.warn({ err, key: session.key }, "could not read the thread's earlier messages");
    return;
  }
  const budget = Math.floor(modelLimits(config, model).contextWindow / 4);
  const lines: string[] = [];
  let used = 0;
  for (const m of [...prior].reverse()) {
    const line = `${m.fromBot ? "You (the assistant)" : m.author}: ${m.text}`;
    used += countTokens(line);
    if (used > budget) break;
    lines.unshift(line);
  }
  if (lines.length === 0) return;
  session.messages.push({
    role: "user",
    content: `Earlier messages in this thread, before I asked you:\n\n${lines.join("\n\n")}`,
  });
}
