import type { Config } from "../../config.js";
import type { PendingStep, Verdict } from "../../core/messages.js";
import { randomRef } from "../../core/random-ref.js";
import type { ThreadKey } from "../../core/thread.js";
import { log } from "../../log.js";
import type { ApprovalBook, ApprovalRecord, Decision, DecisionKind } from "../../store/approvals.js";
import type { Lease } from "../../store/state.js";
import type { TurnLedger, TurnRecord, WaitingTurn } from "../../store/turns.js";
import type { Interaction, Reply } from "../contract.js";
import { type CallPlace, mayDecide } from "./policy.js";
import { overtakenText, questionFor, settledText, verdictOf } from "./questions.js";

export interface DeskDeps {
  config: Config;
  ledger: TurnLedger;
  book: ApprovalBook;
  /** Runs the waiting turn of `key` on, under its thread's lock, once it can go on. */
  resume(key: ThreadKey): void;
  /** A reply in the thread rebuilt in this process, to edit questions with; undefined when its platform is not running here. */
  replyFor(key: ThreadKey, channel?: string): Reply | undefined;
}

export interface ParkContext {
  reply: Reply;
  user: { id: string; name?: string };
  place: CallPlace;
  /** The asker's Slack team, kept with the waiting turn: its approvals for the thread cover that team. */
  team?: string;
  /** The server and MCP name of a model-facing tool name. */
  toolOf(name: string): { server: string; tool: string };
}

/** What the decisions of a waiting step come to, once every one of its calls has one. */
export interface Outcome {
  verdicts: Record<string, Verdict>;
  /** Model-facing names approved for the rest of the thread. */
  approvedForThread: string[];
}

export const WRONG_PLACE =
  "That click did not come from the approval question in its thread, so nothing was decided.";

const CHOICE_KINDS = new Set<DecisionKind>(["approve", "approve_thread", "deny"]);

/**
 * Tool approvals as records: a turn that needs one parks (its record says what it waits
 * for, and it holds no lock and no memory), the question goes in the thread, and a click,
 * in this process or another, after a restart or not, decides it and runs the turn on.
 * Expiry is a timer here, armed again at start-up for every parked turn.
 */
export class ApprovalDesk {
  private readonly timers = new Map<ThreadKey, NodeJS.Timeout>();

  constructor(private readonly deps: DeskDeps) {}

  private get expireAfterMs(): number {
    return this.deps.config.approvals.expireAfterMs;
  }

  /**
   * Parks the turn on `step`: one question per call that asks. The records are written
   * before the questions are posted, so no click can come for a question that is not
   * stored; a question that cannot be posted ends all of the step's asks as unasked.
   */
  async park(record: TurnRecord, step: PendingStep, ctx: ParkContext): Promise<void> {
    const askedAt = new Date();
    const expiresAt = new Date(askedAt.getTime() + this.expireAfterMs).toISOString();
    const calls = new Map((step.assistant.toolCalls ?? []).map((c) => [c.id, c]));
    const approvals: ApprovalRecord[] = step.asks.map((callId) => {
      const call = calls.get(callId);
      const { server, tool } = ctx.toolOf(call?.name ?? "unknown");
      return {
        ref: `ap${randomRef()}`,
        key: record.key,
        callId,
        server,
        tool,
        arguments: call?.arguments ?? {},
        asker: ctx.user,
        platform: ctx.place.platform,
        channel: ctx.place.channel,
        askedAt: askedAt.toISOString(),
        expiresAt,
        ...(record.address?.channel ? { where: record.address.channel } : {}),
      };
    });
    await Promise.all(approvals.map((a) => this.deps.book.open(a)));
    const waiting: WaitingTurn = {
      step,
      refs: Object.fromEntries(approvals.map((a) => [a.callId, a.ref])),
      expiresAt,
      user: ctx.user,
      channel: ctx.place.channel,
      ...(ctx.team ? { team: ctx.team } : {}),
    };
    await this.deps.ledger.park(record, waiting);
    const ask = ctx.reply.ask?.bind(ctx.reply);
    let unasked = ask === undefined;
    for (const approval of approvals) {
      if (unasked || !ask) break;
      try {
        approval.messageId = await ask(questionFor(approval, this.expireAfterMs));
        await this.deps.book.open(approval);
      } catch (err) {
        log.warn({ err, key: record.key, tool: approval.tool }, "could not post an approval question");
        unasked = true;
      }
    }
    if (unasked) {
      // Nobody can approve what was not asked: every ask of the step ends, and the turn goes on without them.
      for (const approval of approvals) await this.take(approval, { kind: "unasked", at: now() }, ctx.reply);
      this.deps.resume(record.key);
      return;
    }
    this.arm(record.key, expiresAt);
  }

  /** The approval a button's ref belongs to, if it is one. */
  find(ref: string): Promise<ApprovalRecord | undefined> {
    return this.deps.book.get(ref);
  }

  /** A click on an approval question. Every refusal is a sentence to the clicker and changes nothing. */
  async interact(interaction: Interaction, approval: ApprovalRecord): Promise<void> {
    const kind = interaction.value as DecisionKind;
    if (typeof interaction.value !== "string" || !CHOICE_KINDS.has(kind)) {
      await interaction.respond("That is not one of this question's choices, so nothing was decided.");
      return;
    }
    // The ref alone is no proof: a click counts only on the question's own message, in its thread.
    if (approval.messageId !== undefined && interaction.messageId !== approval.messageId) {
      log.warn({ key: approval.key, ref: approval.ref }, "an approval click came from another message");
      await interaction.respond(WRONG_PLACE);
      return;
    }
    const place = { platform: approval.platform, channel: approval.channel };
    if (
      !(await mayDecide(this.deps.config, place, approval.asker.id, interaction.user, interaction.inGroups))
    ) {
      await interaction.respond(
        `Only ${approval.asker.name ?? approval.asker.id} or an approver can decide on this, so nothing changed.`,
      );
      return;
    }
    const earlier = await this.deps.book.decision(approval.ref);
    if (earlier) {
      await interaction.respond(alreadyDecided(earlier));
      return;
    }
    if (Date.now() >= Date.parse(approval.expiresAt)) {
      await interaction.respond(
        "This question has expired, so the tool was not run. Ask again if it is still needed.",
      );
      this.deps.resume(approval.key);
      return;
    }
    const decision: Decision = {
      kind,
      by: { id: interaction.user.id, ...(interaction.user.name ? { name: interaction.user.name } : {}) },
      at: now(),
    };
    const reply = this.deps.replyFor(approval.key, approval.where);
    const messageId = approval.messageId ?? interaction.messageId;
    if (!(await this.take({ ...approval, ...(messageId ? { messageId } : {}) }, decision, reply))) {
      const first = await this.deps.book.decision(approval.ref);
      await interaction.respond(first ? alreadyDecided(first) : "Someone decided on this just before you.");
      return;
    }
    log.info(
      { key: approval.key, tool: `${approval.server}/${approval.tool}`, decision: kind },
      "approval decided",
    );
    this.deps.resume(approval.key);
  }

  /**
   * The verdict of every waiting call, once each has a decision; calls past their expiry
   * get one now. Undefined while someone can still decide (the timer stays armed).
   */
  async outcome(
    key: ThreadKey,
    waiting: WaitingTurn,
    reply: Reply | undefined,
  ): Promise<Outcome | undefined> {
    const verdicts: Record<string, Verdict> = {};
    const approvedForThread: string[] = [];
    const names = new Map((waiting.step.assistant.toolCalls ?? []).map((c) => [c.id, c.name]));
    const expired = Date.now() >= Date.parse(waiting.expiresAt);
    for (const [callId, ref] of Object.entries(waiting.refs)) {
      let decision = await this.deps.book.decision(ref);
      if (!decision && expired) {
        const approval = await this.deps.book.get(ref);
        if (approval) await this.take(approval, { kind: "expire", at: now() }, reply);
        decision = (await this.deps.book.decision(ref)) ?? { kind: "expire", at: now() };
      }
      if (!decision) {
        this.arm(key, waiting.expiresAt);
        return undefined;
      }
      verdicts[callId] = verdictOf(decision, this.expireAfterMs);
      const name = names.get(callId);
      if (decision.kind === "approve_thread" && name) approvedForThread.push(name);
    }
    this.disarm(key);
    return { verdicts, approvedForThread };
  }

  /**
   * When the last of a waiting step's calls was decided, once each has a decision (ms since
   * the epoch); undefined while someone can still decide.
   */
  async decidedAt(waiting: WaitingTurn): Promise<number | undefined> {
    let last = 0;
    for (const ref of Object.values(waiting.refs)) {
      const decision = await this.deps.book.decision(ref);
      if (!decision) return undefined;
      last = Math.max(last, Date.parse(decision.at));
    }
    return last;
  }

  /** Runs the waiting turn of `key` on now, if it can go on (see `DeskDeps.resume`). */
  resume(key: ThreadKey): void {
    this.deps.resume(key);
  }

  /** The person wrote again while the turn waited: its questions end unanswered. */
  async supersede(key: ThreadKey, waiting: WaitingTurn, reply: Reply | undefined): Promise<void> {
    this.disarm(key);
    for (const ref of Object.values(waiting.refs)) {
      const approval = await this.deps.book.get(ref);
      if (!approval) continue;
      if (await this.take(approval, { kind: "supersede", at: now() }, reply)) continue;
      // Approved just before this message took the thread: the step still never runs (the
      // model is told so), and the question must not go on saying that it did.
      const earlier = await this.deps.book.decision(ref);
      const stored = (await this.deps.book.get(ref)) ?? approval;
      if (earlier?.kind.startsWith("approve") && stored.messageId && reply?.settle) {
        await reply
          .settle(stored.messageId, overtakenText(stored, earlier))
          .catch((err: unknown) =>
            log.warn({ err, key }, "could not show that an approved call did not run"),
          );
      }
    }
  }

  /**
   * The thread starts a new conversation (/new, under its lock): a turn waiting here ends,
   * its questions unanswered as when the person writes again, since a click would go on
   * with the old conversation's step in the new one. `lease`: the record ends only while
   * it is held, so a /new that stalled never ends the record of a turn the thread's new
   * holder began meanwhile.
   */
  async abandon(key: ThreadKey, lease?: Lease): Promise<void> {
    const record = await this.deps.ledger.get(key);
    if (!record?.waiting) return;
    this.deps.ledger.guard(record, lease);
    await this.supersede(key, record.waiting, this.deps.replyFor(key, record.address?.channel));
    await this.deps.ledger.end(record);
  }

  /** Runs the turn on at its expiry, in case nobody decides. */
  arm(key: ThreadKey, expiresAt: string): void {
    this.disarm(key);
    const delay = Math.max(0, Date.parse(expiresAt) - Date.now()) + 50;
    // Node timers hold at most ~24.8 days; an expiry is minutes away.
    const timer = setTimeout(
      () => {
        this.timers.delete(key);
        this.deps.resume(key);
      },
      Math.min(delay, 2 ** 31 - 1),
    );
    timer.unref();
    this.timers.set(key, timer);
  }

  armed(key: ThreadKey): boolean {
    return this.timers.has(key);
  }

  disarm(key: ThreadKey): void {
    clearTimeout(this.timers.get(key));
    this.timers.delete(key);
  }

  close(): void {
    for (const key of [...this.timers.keys()]) this.disarm(key);
  }

  /** Records the decision if it is the first, and shows it on the question. */
  private async take(
    approval: ApprovalRecord,
    decision: Decision,
    reply: Reply | undefined,
  ): Promise<boolean> {
    if (!(await this.deps.book.decide(approval, decision))) return false;
    if (approval.messageId && reply?.settle) {
      await reply
        .settle(approval.messageId, settledText(approval, decision, this.expireAfterMs))
        .catch((err: unknown) =>
          log.warn({ err, key: approval.key }, "could not show an approval's decision"),
        );
    }
    return true;
  }
}

function now(): string {
  return new Date().toISOString();
}

function alreadyDecided(d: Decision): string {
  const by = d.by?.name ?? d.by?.id;
  switch (d.kind) {
    case "approve":
    case "approve_thread":
      return `${by ?? "Someone"} already approved this; it runs once.`;
    case "deny":
      return `${by ?? "Someone"} already denied this.`;
    case "expire":
      return "This question has expired, so the tool was not run. Ask again if it is still needed.";
    default:
      return "This question is no longer waiting for an answer.";
  }
}
