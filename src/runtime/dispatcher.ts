import type { Agent } from "../agent/agent.js";
import { countTokens, modelLimits } from "../agent/context.js";
import type { Config } from "../config.js";
import type { Artifact } from "../core/artifacts.js";
import { SwitchboardError, toUserFacing } from "../core/errors.js";
import type { AgentEvent } from "../core/events.js";
import type { PriorMessage } from "../core/inbound.js";
import type { ThreadKey } from "../core/thread.js";
import { platformOf } from "../core/thread.js";
import { log } from "../log.js";
import type { ToolHub } from "../mcp/types.js";
import type { Dedupe } from "../store/dedupe.js";
import type { ThreadLock } from "../store/locks.js";
import type { Session, SessionRepository } from "../store/sessions.js";
import { runCommand } from "./commands.js";
import type { Adapter, Command, Inbound, Interaction, Reply, TurnRunner } from "./contract.js";
import { prepareAttachments } from "./inbound-files.js";
import { handleInteraction } from "./interactions.js";

export const INTERRUPTED_NOTE = "Interrupted by a restart; ask again.";

export interface DispatcherDeps {
  agent: Agent;
  sessions: SessionRepository;
  lock: ThreadLock;
  dedupe: Dedupe;
  hub: ToolHub;
  config: Config;
  observer?: TurnObserver;
}

/** Hooks for metrics and logs (issue: operations); all optional. */
export interface TurnObserver {
  turnStarted?(inbound: Inbound): void;
  firstVisible?(inbound: Inbound, ms: number): void;
  turnEnded?(
    inbound: Inbound,
    outcome: "ok" | "error" | "interrupted",
    ms: number,
    events: AgentEvent[],
  ): void;
}

interface InFlight {
  controller: AbortController;
  done: Promise<void>;
}

/** Dedupe, per-thread queue, session load, run the agent, drive the Reply. Shared by every adapter. */
export class Dispatcher implements TurnRunner {
  private readonly inFlight = new Set<InFlight>();
  /** Turns waiting for their thread's lock, per thread (for /metrics). */
  private readonly waiting = new Map<ThreadKey, number>();
  private stopping = false;

  constructor(private readonly deps: DispatcherDeps) {}

  async firstSight(id: string): Promise<boolean> {
    return this.deps.dedupe.firstSight(id);
  }

  async knows(key: ThreadKey): Promise<boolean> {
    return this.deps.sessions.exists(key);
  }

  async handle(inbound: Inbound): Promise<void> {
    try {
      // Every id of the message is marked, so whichever copy arrives first wins.
      const sightings = await Promise.all(
        [inbound.id, ...(inbound.aliases ?? [])].map((id) => this.firstSight(id)),
      );
      if (sightings.some((first) => !first)) {
        log.debug({ id: inbound.id, key: inbound.key }, "duplicate event dropped");
        return;
      }
    } catch (err) {
      log.error({ err, key: inbound.key }, "could not check the event for duplicates");
      await inbound.reply.notice(toUserFacing(err).message).catch(() => undefined);
      return;
    }
    if (this.stopping) return this.refuse(inbound);
    // Tracked from here, not from when the lock is taken: a turn queued behind another is
    // still owed an answer (or the restart note) when the process stops.
    const controller = new AbortController();
    const entry: InFlight = { controller, done: Promise.resolve() };
    this.inFlight.add(entry);
    this.waiting.set(inbound.key, (this.waiting.get(inbound.key) ?? 0) + 1);
    let waited = false;
    const leaveQueue = () => {
      if (waited) return;
      waited = true;
      const n = (this.waiting.get(inbound.key) ?? 1) - 1;
      if (n > 0) this.waiting.set(inbound.key, n);
      else this.waiting.delete(inbound.key);
    };
    entry.done = this.deps.lock
      .run(inbound.key, () => {
        leaveQueue();
        return controller.signal.aborted ? this.refuse(inbound) : this.turn(inbound, controller);
      })
      .catch(async (err: unknown) => {
        log.error({ err, key: inbound.key }, "turn could not run");
        await inbound.reply.notice(toUserFacing(err).message).catch(() => undefined);
      })
      .finally(() => {
        leaveQueue();
        this.inFlight.delete(entry);
      });
    await entry.done;
  }

  /** Turns waiting behind another turn of their thread: in total and in the longest queue. */
  queueStats(): { queued: number; longest: number } {
    let queued = 0;
    let longest = 0;
    for (const n of this.waiting.values()) {
      queued += n;
      longest = Math.max(longest, n);
    }
    return { queued, longest };
  }

  async interact(interaction: Interaction): Promise<void> {
    if (interaction.user.bot) return;
    if (!(await this.firstSight(interaction.id).catch(() => true))) return;
    await handleInteraction(interaction);
  }

  command(cmd: Command): Promise<string> {
    return runCommand(cmd, this.deps);
  }

  /**
   * Graceful stop: refuse new turns, let running ones finish within `graceMs`, then end the
   * rest with a note in their thread. Resolves when every turn has written its last word.
   */
  async drain(graceMs: number): Promise<{ interrupted: number }> {
    this.stopping = true;
    const all = () => Promise.all([...this.inFlight].map((t) => t.done));
    const timedOut = await Promise.race([
      all().then(() => false),
      new Promise<boolean>((r) => setTimeout(() => r(true), graceMs).unref()),
    ]);
    const interrupted = timedOut ? this.inFlight.size : 0;
    for (const t of this.inFlight) {
      t.controller.abort(new SwitchboardError("interrupted", INTERRUPTED_NOTE));
    }
    await all();
    return { interrupted };
  }

  /**
   * Replies a crash (kill -9) left half-written get the same note a graceful restart writes.
   * Each thread is checked under its lock and read again there, so a reply another replica
   * is still writing (it holds the lock) is left alone.
   */
  async recoverInterrupted(adapters: Adapter[]): Promise<number> {
    const { sessions, lock } = this.deps;
    let recovered = 0;
    for (const pending of await sessions.listPending().catch(() => [])) {
      const adapter = adapters.find((a) => a.platform === platformOf(pending.key));
      // A platform that is not running now keeps its pending replies for a later start.
      if (!adapter?.recover) continue;
      await lock
        .run(pending.key, async () => {
          const session = await sessions.get(pending.key);
          if (!session?.pendingReply) return;
          await adapter.recover?.(session.key, undefined, INTERRUPTED_NOTE);
          delete session.pendingReply;
          await sessions.save(session);
          recovered++;
        })
        .catch((err: unknown) => log.warn({ err, key: pending.key }, "could not end an interrupted reply"));
    }
    if (recovered) log.info({ recovered }, "ended replies interrupted by a crash");
    return recovered;
  }

  private async refuse(inbound: Inbound): Promise<void> {
    await inbound.reply
      .stream()
      .fail(INTERRUPTED_NOTE)
      .catch((err: unknown) => log.warn({ err, key: inbound.key }, "could not post the restart note"));
  }

  private async turn(inbound: Inbound, controller: AbortController): Promise<void> {
    const { agent, sessions, config, observer } = this.deps;
    const started = Date.now();
    observer?.turnStarted?.(inbound);
    const events: AgentEvent[] = [];
    let outcome: "ok" | "error" | "interrupted" = "ok";
    const sink = inbound.reply.stream();
    const artifacts: Artifact[] = [];
    let session: Session | undefined;
    let visible = false;
    const markVisible = () => {
      if (visible) return;
      visible = true;
      observer?.firstVisible?.(inbound, Date.now() - started);
    };
    try {
      session = await sessions.getOrCreate(inbound.key);
      if (session.turns === 0 && session.messages.length === 0 && inbound.history) {
        await this.seedFromThread(session, inbound.history, agent.modelFor(session));
      }
      const model = agent.modelFor(session);
      const input = await prepareAttachments(inbound.text, inbound.attachments, {
        config,
        model,
        signal: controller.signal,
      });
      session.pendingReply = { startedAt: new Date().toISOString() };
      await sessions.save(session);
      const run = agent.runTurn({
        session,
        user: inbound.user,
        text: input.text,
        parts: input.parts,
        platform: inbound.platform,
        channel: inbound.channel,
        signal: controller.signal,
      });
      for await (const event of run) {
        events.push(event);
        switch (event.type) {
          case "status":
            markVisible();
            void inbound.reply
              .status(event.text)
              .catch((err: unknown) => log.debug({ err }, "status not shown"));
            break;
          case "text":
            markVisible();
            sink.write(event.delta);
            break;
          case "artifact":
            artifacts.push(event.artifact);
            break;
          case "done":
            await sink.finish();
            await this.clearPending(session);
            await this.upload(inbound.reply, artifacts);
            break;
          case "error": {
            const interrupted = controller.signal.aborted && this.stopping;
            outcome = interrupted ? "interrupted" : "error";
            await sink.fail(interrupted ? INTERRUPTED_NOTE : event.error.message);
            await this.clearPending(session);
            break;
          }
          case "title":
            await inbound.reply
              .title(event.title)
              .catch((err: unknown) => log.warn({ err }, "title not set"));
            break;
          case "tool":
            break;
        }
      }
    } catch (err) {
      outcome = "error";
      log.error({ err, key: inbound.key }, "reply failed");
      await sink.fail(toUserFacing(err).message).catch(() => undefined);
    } finally {
      if (session?.pendingReply) {
        await this.clearPending(session).catch((err: unknown) =>
          log.warn({ err }, "could not clear the pending reply"),
        );
      }
      const ms = Date.now() - started;
      observer?.turnEnded?.(inbound, outcome, ms, events);
      log.info({ key: inbound.key, outcome, ms, ...turnFigures(events) }, "turn");
    }
  }

  private async clearPending(session: Session): Promise<void> {
    delete session.pendingReply;
    await this.deps.sessions.save(session);
  }

  /** Each artifact once; all at once, so a platform can put several files in one message. */
  private async upload(reply: Reply, artifacts: Artifact[]): Promise<void> {
    const seen = new Set<string>();
    const unique = artifacts.filter((a) => {
      const id = `${a.filename}:${a.bytes.length}:${Buffer.from(a.bytes.subarray(0, 64)).toString("base64")}`;
      if (seen.has(id)) return false;
      seen.add(id);
      return true;
    });
    await Promise.all(
      unique.map((a) =>
        reply.upload(a).catch((err: unknown) => log.warn({ err, file: a.filename }, "artifact not uploaded")),
      ),
    );
  }

  /** A mention mid-thread: start the session with what was said before, newest first until a quarter of the window. */
  private async seedFromThread(
    session: Session,
    history: () => Promise<PriorMessage[]>,
    model: string,
  ): Promise<void> {
    let prior: PriorMessage[];
    try {
      prior = await history();
    } catch (err) {
      log.warn({ err, key: session.key }, "could not read the thread's earlier messages");
      return;
    }
    const budget = Math.floor(modelLimits(this.deps.config, model).contextWindow / 4);
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
}

/** The figures of one turn for its log line: tool calls with outcome, and token usage. */
function turnFigures(events: AgentEvent[]) {
  const tools = events.flatMap((e) =>
    e.type === "tool" && e.phase === "end" ? [`${e.server}/${e.tool}:${e.ok ? "ok" : "error"}`] : [],
  );
  const done = events.find((e) => e.type === "done");
  const error = events.find((e) => e.type === "error");
  return {
    toolCalls: tools.length,
    tools,
    tokensIn: done?.type === "done" ? done.usage.inputTokens : 0,
    tokensOut: done?.type === "done" ? done.usage.outputTokens : 0,
    ...(error?.type === "error" ? { error: error.error.code } : {}),
  };
}
