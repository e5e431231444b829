import type { Agent } from "../agent/agent.js";
import type { Config } from "../config.js";
import { allowedModels } from "../config.js";
import type { ToolHub } from "../mcp/types.js";
import type { ThreadLock } from "../store/locks.js";
import type { SessionRepository } from "../store/sessions.js";
import type { Command } from "./contract.js";

/** What commands read and change: the thread's session (under its lock), the tool hub, the agent. */
export interface CommandDeps {
  agent: Agent;
  sessions: SessionRepository;
  lock: ThreadLock;
  hub: ToolHub;
  config: Config;
}

export const HELP_TEXT = [
  "Mention me or write in a thread I am in, and I answer there using my tools.",
  "Commands:",
  "• new: start a fresh conversation in this thread",
  "• tools: list the tool servers and their status",
  "• model [name]: show the model, or switch this thread to another allowed model",
  "• compact: fold the older part of this conversation into a summary now",
  "• summary: show the current summary",
  "• title: make a new title for this thread",
  "• help: this text",
].join("\n");

export async function runCommand(cmd: Command, deps: CommandDeps): Promise<string> {
  const { sessions, lock, hub, agent, config } = deps;
  switch (cmd.name) {
    case "help":
      return HELP_TEXT;
    case "new":
      await lock.run(cmd.key, () => sessions.reset(cmd.key));
      return "Started a new conversation. I have forgotten what was said before in this thread.";
    case "tools": {
      const status = hub.status();
      if (status.length === 0)
        return "No tool servers are configured. Add them to config/mcp.json (see the README).";
      const lines = status.map((s) => {
        const state = s.state === "connected" ? `connected, ${s.toolCount} tools` : s.state;
        return `• ${s.name} (${s.transport}): ${state}${s.error ? ` (${s.error})` : ""}`;
      });
      return `Tool servers:\n${lines.join("\n")}`;
    }
    case "summary": {
      const session = await sessions.get(cmd.key);
      return session?.summary
        ? `Summary so far:\n${session.summary}`
        : "There is no summary yet: this conversation is still short.";
    }
    case "compact":
      return lock.run(cmd.key, async () => {
        const session = await sessions.getOrCreate(cmd.key);
        try {
          const r = await agent.compact(session, true);
          return r.compressed
            ? `Folded ${r.archived} older messages into the summary.`
            : "Nothing to compress yet: the conversation is short.";
        } catch {
          return "I could not compress the conversation right now (the model did not answer). Nothing was lost; try again later.";
        }
      });
    case "title":
      return lock.run(cmd.key, async () => {
        const session = await sessions.getOrCreate(cmd.key);
        if (!session.messages.some((m: { role: string }) => m.role === "assistant"))
          return "There is nothing to title yet: ask me something first.";
        return `New title: ${await agent.title(session)}`;
      });
    case "model":
      return lock.run(cmd.key, async () => {
        const session = await sessions.getOrCreate(cmd.key);
        const allowed = allowedModels(config);
        const wanted = cmd.arg?.trim();
        if (!wanted) return `This thread uses ${agent.modelFor(session)}. Available: ${allowed.join(", ")}.`;
        if (!allowed.includes(wanted)) {
          return `${wanted} is not one of the allowed models (${allowed.join(", ")}). Ask an admin to add it to models.allowed.`;
        }
        session.settings.model = wanted === config.llm.model ? undefined : wanted;
        await sessions.save(session);
        return `This thread now uses ${wanted}.`;
      });
  }
}
