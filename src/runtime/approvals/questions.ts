import type { Verdict } from "../../core/messages.js";
import type { ApprovalRecord, Decision } from "../../store/approvals.js";
import type { Question } from "../contract.js";

/** Arguments longer than this are cut in the question: a chat message is not a file viewer. */
const ARGS_SHOWN = 1_200;

export const CHOICES: Question["choices"] = [
  { value: "approve", label: "Approve", style: "primary" },
  { value: "approve_thread", label: "Approve for this thread" },
  { value: "deny", label: "Deny", style: "danger" },
];

export function minutes(ms: number): string {
  const m = Math.round(ms / 60_000);
  return m >= 1 ? `${m} minute${m === 1 ? "" : "s"}` : `${Math.round(ms / 1000)} seconds`;
}

function who(user: { id: string; name?: string }): string {
  return user.name ?? user.id;
}

function toolLine(r: ApprovalRecord): string {
  return `\`${r.tool}\` from **${r.server}**`;
}

/** The arguments as indented JSON in a code block, cut where they are long, never able to close the block early. */
export function argumentsBlock(args: Record<string, unknown>): string {
  let json = JSON.stringify(args, null, 2) ?? "{}";
  if (json.length > ARGS_SHOWN) {
    json = `${json.slice(0, ARGS_SHOWN)}\n… (${(json.length - ARGS_SHOWN).toLocaleString("en")} more characters)`;
  }
  return `\`\`\`\n${json.replace(/```/g, "`\u200b``")}\n\`\`\``;
}

export function questionFor(r: ApprovalRecord, expireAfterMs: number): Question {
  return {
    ref: r.ref,
    text:
      `🔐 ${who(r.asker)}, may I run ${toolLine(r)}?\n${argumentsBlock(r.arguments)}\n` +
      `${who(r.asker)} or an approver can decide within ${minutes(expireAfterMs)}; after that it is not run.`,
    choices: CHOICES,
  };
}

/** What the question's message says once it is decided (the buttons are gone). */
export function settledText(r: ApprovalRecord, d: Decision, expireAfterMs: number): string {
  const by = d.by ? who(d.by) : "Someone";
  const head = {
    approve: `✅ ${by} approved ${toolLine(r)}.`,
    approve_thread: `✅ ${by} approved ${toolLine(r)} for the rest of this thread.`,
    deny: `🚫 ${by} denied ${toolLine(r)}: it was not run.`,
    expire: `⌛ Nobody decided on ${toolLine(r)} within ${minutes(expireAfterMs)}: it was not run.`,
    supersede: `⏭️ ${toolLine(r)} was not run: the conversation went on before anyone decided.`,
    unasked: `⚠️ ${toolLine(r)} was not run: I could not ask for approval of every call of this step.`,
  }[d.kind];
  return `${head}\n${argumentsBlock(r.arguments)}`;
}

/** A call approved just before the thread's next message took over: it never ran after all. */
export function overtakenText(r: ApprovalRecord, approval: Decision): string {
  const by = approval.by ? who(approval.by) : "Someone";
  return `⏭️ ${by} approved ${toolLine(r)}, but it was not run: the conversation went on first.\n${argumentsBlock(r.arguments)}`;
}

/** What the model reads as the call's outcome. */
export function verdictOf(d: Decision, expireAfterMs: number): Verdict {
  const by = d.by ? who(d.by) : "The user";
  switch (d.kind) {
    case "approve":
    case "approve_thread":
      return { run: true };
    case "deny":
      return {
        run: false,
        reason: `${by} denied this call, so it was not run. Do not try it again unless they ask you to; say what you would have done instead.`,
      };
    case "expire":
      return {
        run: false,
        reason: `Nobody approved this call within ${minutes(expireAfterMs)}, so it was not run. Tell the user it needs their approval.`,
      };
    case "supersede":
      return { run: false, reason: "The user wrote again before approving this call, so it was not run." };
    case "unasked":
      return {
        run: false,
        reason:
          "I could not post the approval question in the thread, so this call was not run. Tell the user.",
      };
  }
}

export const SUPERSEDED_REASON =
  "The user wrote again before anyone approved this step's calls, so none of them ran.";

export const CANNOT_ASK_REASON =
  "This tool needs a person's approval, and nobody can be asked here, so it was not run. Tell the user to ask in Slack or Discord, or to have an operator allow the tool for this place.";

/** A call of a tool no connected server offers (a typo, or its server is down): it ran nowhere. */
export const unknownTool = (name: string): string =>
  `There is no tool named "${name}" right now (its server may be down), so it was not run. Call only the tools you are offered.`;

export const NEVER_REASON =
  "This tool may not run here (an operator's rule), so it was not run. Tell the user; do not call it again in this conversation.";
