import type { Agent } from "../agent/agent.js";
import { applyFold, type FoldPlan } from "../agent/memory.js";
import { log } from "../log.js";
import type { ThreadLock } from "../store/locks.js";
import type { Session, SessionRepository } from "../store/sessions.js";
import type { Reply } from "./contract.js";

export interface AfterTurnDeps {
  agent: Agent;
  sessions: SessionRepository;
  lock: ThreadLock;
}

/**
 * Whether a thread has anything to do after its turn: a title to make (where the reply
 * shows one) or a fold that is due. Most turns have neither, and then no after-turn work
 * (nor its span, which would show nothing done) is started.
 */
export function hasWorkAfter(session: Session, reply: Reply, agent: Agent): boolean {
  return (agent.needsTitle(session) && reply.takesTitle !== false) || agent.needsCompaction(session);
}

/**
 * The title and the compression of a thread, after its turn has released the lock: the
 * model calls run on the turn's copy of the session while the thread's next message is
 * already being answered (with the summary as it was). What they produce is then applied
 * to the stored session under the lock, in one save, and only where the thread has not
 * moved on in a way that makes it wrong (/new, another fold).
 */
export async function runAfterTurn(
  session: Session,
  reply: Reply,
  deps: AfterTurnDeps,
  signal: AbortSignal,
): Promise<void> {
  const { agent, sessions, lock } = deps;
  const [title, plan] = await Promise.all([
    agent.needsTitle(session) && reply.takesTitle !== false
      ? agent.makeTitle(session).catch((err: unknown) => {
          log.warn({ err, key: session.key }, "title not made");
          return undefined;
        })
      : undefined,
    agent.planCompaction(session).catch((err: unknown) => {
      log.warn({ err, key: session.key }, "compression failed; will retry after the next turn");
      return undefined;
    }),
  ]);
  if ((!title && !plan) || signal.aborted) return;
  const applied = await lock.run(session.key, () => apply(session.key, title, plan, sessions));
  if (applied.title) {
    await reply.title(applied.title).catch((err: unknown) => log.warn({ err }, "title not set"));
  }
}

async function apply(
  key: string,
  title: string | undefined,
  plan: FoldPlan | undefined,
  sessions: SessionRepository,
): Promise<{ title?: string }> {
  const current = await sessions.get(key);
  if (!current) return {};
  const titled = title !== undefined && !current.title;
  if (titled) current.title = title;
  const folded = plan ? await applyFold(current, plan, sessions) : false;
  if (titled || folded) await sessions.save(current);
  return titled ? { title } : {};
}
