import type { Agent } from "../agent/agent.js";
import type { Config } from "../config.js";
import { allowedModels } from "../config.js";
import { SwitchboardError } from "../core/errors.js";
import type { ThreadKey } from "../core/thread.js";
import { log } from "../log.js";
import { LockLost, type ThreadLock } from "../store/locks.js";
import type { SessionRepository } from "../store/sessions.js";
import type { Lease } from "../store/state.js";

/*
 * The commands that change a thread's session: each under the thread's lock, its writes
 * fenced by the lock's lease, as a turn's are. A command whose process stalled past its
 * heartbeat while another took the thread and answered in it would otherwise save its
 * older copy of the session over that answer.
 */

/** What these commands read and change (part of `CommandDeps`). */
export interface SessionCommandDeps {
  agent: Agent;
  sessions: SessionRepository;
  lock: ThreadLock;
  config: Config;
  /** Ends the thread's turn waiting for approvals, if there is one (see ApprovalDesk.abandon). */
  abandonWaiting?(key: ThreadKey, lease?: Lease): Promise<void>;
}

interface ThreadCommand {
  key: ThreadKey;
  arg?: string;
}

export const LOST_THREAD_NOTE =
  "That was not saved: another of my processes took this thread over meanwhile. Please try again.";

/** Runs `fn` under the thread's lock; a write its lease refused ends it with the sentence. */
async function underLease(
  lock: ThreadLock,
  key: ThreadKey,
  fn: (lease: Lease | undefined) => Promise<string>,
): Promise<string> {
  try {
    return await lock.run(key, ({ lease }) => fn(lease));
  } catch (err) {
    if (!(err instanceof LockLost)) throw err;
    log.warn({ key }, "lost the thread's lock while a command saved its session; nothing of it was saved");
    return LOST_THREAD_NOTE;
  }
}

export function newConversation(cmd: ThreadCommand, deps: SessionCommandDeps): Promise<string> {
  return underLease(deps.lock, cmd.key, async (lease) => {
    await deps.abandonWaiting?.(cmd.key, lease);
    await deps.sessions.reset(cmd.key, lease);
    return "Started a new conversation. I have forgotten what was said before in this thread.";
  });
}

export function switchModel(
  cmd: ThreadCommand,
  { lock, sessions, agent, config }: SessionCommandDeps,
): Promise<string> {
  return underLease(lock, cmd.key, async (lease) => {
    const session = await sessions.getOrCreate(cmd.key);
    const allowed = allowedModels(config);
    const wanted = cmd.arg?.trim();
    if (!wanted) return `This thread uses ${agent.modelFor(session)}. Available: ${allowed.join(", ")}.`;
    if (!allowed.includes(wanted)) {
      return `${wanted} is not one of the allowed models (${allowed.join(", ")}). Ask an admin to add it to models.allowed.`;
    }
    session.settings.model = wanted === config.llm.model ? undefined : wanted;
    await sessions.save(session, lease);
    return `This thread now uses ${wanted}.`;
  });
}

export function compactThread(
  cmd: ThreadCommand,
  { lock, sessions, agent }: SessionCommandDeps,
): Promise<string> {
  return underLease(lock, cmd.key, async (lease) => {
    const session = await sessions.getOrCreate(cmd.key);
    try {
      const r = await agent.compact(session, true, lease);
      return r.compressed
        ? `Folded ${r.archived} older messages into the summary.`
        : "Nothing to compress yet: the conversation is short.";
    } catch (err) {
      if (err instanceof LockLost) throw err;
      log.warn({ err, key: cmd.key }, "compact failed");
      if (err instanceof SwitchboardError && !err.code.startsWith("llm_")) return err.userMessage;
      return "I could not compress the conversation right now (the model did not answer). Nothing was lost; try again later.";
    }
  });
}

export function retitleThread(
  cmd: ThreadCommand,
  { lock, sessions, agent }: SessionCommandDeps,
): Promise<string> {
  return underLease(lock, cmd.key, async (lease) => {
    const session = await sessions.getOrCreate(cmd.key);
    if (!session.messages.some((m: { role: string }) => m.role === "assistant"))
      return "There is nothing to title yet: ask me something first.";
    return `New title: ${await agent.title(session, lease)}`;
  });
}
