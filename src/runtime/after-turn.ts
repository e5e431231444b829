import type { Agent } from "../agent/agent.js";
import { applyFold, type FoldPlan } from "../agent/memory.js";
import { log } from "../log.js";
import { LockLost, type ThreadLock } from "../store/locks.js";
import type { Session, SessionRepository } from "../store/sessions.js";
import type { Lease } from "../store/state.js";
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
 * moved on in a way that makes it wrong (/new, another fold). Its writes are fenced by the
 * lock's lease: a job that stalls under the lock past its heartbeat (a long GC pause, a
 * store answering late) while another replica takes the thread and saves its next turn
 * writes nothing over that turn, and is applied once more, to the session as it is then.
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
  const held = () => lock.run(session.key, ({ lease }) => apply(session.key, title, plan, sessions, lease));
  const applied = await held().catch((err: unknown) => {
    if (!(err instanceof LockLost) || signal.aborted) throw err;
    log.warn(
      { key: session.key },
      "lost the thread's lock while saving its title or summary; applying them again",
    );
    return held();
  });
  if (applied.title) {
    await reply.title(applied.title).catch((err: unknown) => log.warn({ err }, "title not set"));
  }
}

async function apply(
  key: string,
  title: string | undefined,
  plan: FoldPlan | undefined,
  sessions: SessionRepository,
  lease: Lease | undefined,
): Promise<{ title?: string }> {
  const current = await sessions.get(key);
  if (!current) return {};
  const titled = title !== undefined && !current.title;
  if (titled) current.title = title;
  const folded = plan ? await applyFold(current, plan, sessions, lease) : false;
  if (titled || folded) await sessions.save(current, lease);
  return titled ? { title } : {};
}
