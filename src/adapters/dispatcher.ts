import type { Agent } from "../agent/agent.js";
import { countTokens, modelLimits } from "../agent/context.js";
import type { AgentEvent } from "../agent/events.js";
import type { Config } from "../config.js";
import { SwitchboardError } from "../errors.js";
import { log } from "../log.js";
import type { Artifact, ToolHub } from "../mcp/types.js";
import type { Dedupe } from "../store/dedupe.js";
import type { ThreadLock } from "../store/locks.js";
import type { Session, SessionRepository } from "../store/sessions.js";
import { runCommand } from "./commands.js";
import { prepareAttachments } from "./inbound-files.js";
import type { Command, Inbound, PriorMessage, Reply, ThreadKey, TurnRunner } from "./types.js";

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
  private stopping = false;

  constructor(private readonly deps: DispatcherDeps) {}

  async firstSight(id: string): Promise<boolean> {
    return this.deps.dedupe.firstSight(id);
  }

  async knows(key: ThreadKey): Promise<boolean> {
    return (await this.deps.sessions.get(key)) !== undefined;
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
      if (this.stopping) {
        await inbound.reply.notice(INTERRUPTED_NOTE).catch(() => undefined);
        return;
      }
      await this.deps.lock.run(inbound.key, () => this.track(inbound));
    } catch (err) {
      log.error({ err, key: inbound.key }, "turn could not run");
    }
  }

  command(cmd: Command): Promise<string> {
    return runCommand(cmd, this.deps);
  }

  /** Turns in flight right now (for shutdown and metrics). */
  get activeTurns(): number {
    return this.inFlight.size;
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

  private track(inbound: Inbound): Promise<void> {
    const controller = new AbortController();
    const entry: InFlight = { controller, done: Promise.resolve() };
    entry.done = this.turn(inbound, controller).finally(() => this.inFlight.delete(entry));
    this.inFlight.add(entry);
    return entry.done;
  }

  private async turn(inbound: Inbound, controller: AbortController): Promise<void> {
    const { agent, sessions, config, observer } = this.deps;
    const started = Date.now();
    observer?.turnStarted?.(inbound);
    const session = await sessions.getOrCreate(inbound.key);
    if (session.turns === 0 && session.messages.length === 0 && inbound.history) {
      await this.seedFromThread(session, inbound.history, agent.modelFor(session));
    }
    const model = agent.modelFor(session);
    const input = await prepareAttachments(inbound.text, inbound.attachments, { config, model });
    session.pendingReply = { startedAt: new Date().toISOString() };
    await sessions.save(session);

    const events: AgentEvent[] = [];
    let outcome: "ok" | "error" | "interrupted" = "ok";
    const sink = inbound.reply.stream();
    const artifacts: Artifact[] = [];
    let visible = false;
    const markVisible = () => {
      if (visible) return;
      visible = true;
      observer?.firstVisible?.(inbound, Date.now() - started);
    };
    try {
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
      await sink.fail("I could not finish writing this answer. Please ask again.").catch(() => undefined);
    } finally {
      const ms = Date.now() - started;
      observer?.turnEnded?.(inbound, outcome, ms, events);
      log.info({ key: inbound.key, outcome, ms, ...turnFigures(events) }, "turn");
    }
  }

  private async clearPending(session: Session): Promise<void> {
    delete session.pendingReply;
    await this.deps.sessions.save(session);
  }

  private async upload(reply: Reply, artifacts: Artifact[]): Promise<void> {
    const seen = new Set<string>();
    for (const a of artifacts) {
      const id = `${a.filename}:${a.bytes.length}:${Buffer.from(a.bytes.subarray(0, 64)).toString("base64")}`;
      if (seen.has(id)) continue;
      seen.add(id);
      await reply
        .upload(a)
        .catch((err: unknown) => log.warn({ err, file: a.filename }, "artifact not uploaded"));
    }
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
