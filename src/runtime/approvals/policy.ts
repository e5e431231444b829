import type { CallGate } from "../../agent/loop.js";
import { SEARCH_TOOL } from "../../agent/tool-offer.js";
import type { Config } from "../../config.js";
import type { Provenance } from "../../core/inbound.js";
import type { ToolCall } from "../../core/messages.js";
import type { Platform } from "../../core/thread.js";
import type { ToolEntry, ToolHub } from "../../mcp/types.js";
import type { SessionSettings } from "../../store/sessions.js";
import type { Interaction } from "../contract.js";
import { CANNOT_ASK_REASON, NEVER_REASON, unknownTool } from "./questions.js";

export type ApprovalMode = "always" | "ask" | "never";

/** Where a call would run: the platform and the channel (a thread's parent channel). */
export interface CallPlace {
  platform: Platform;
  channel: string;
}

/**
 * Whether a tool runs, asks first, or never runs in `place`. The most specific matching
 * rule decides: one naming the tool beats one naming only its server, then one naming the
 * channel, then the platform; among equals the later rule wins. Without a rule the tool's
 * own annotations decide: read-only tools run, every other one asks (no annotations means
 * no promise). In the terminal the person at the keyboard started the bot with these
 * servers, so tools run there unless a rule says otherwise.
 */
export function approvalMode(config: Config, entry: ToolEntry, place: CallPlace): ApprovalMode {
  let best: { score: number; mode: ApprovalMode } | undefined;
  for (const rule of config.approvals.rules) {
    if (rule.server !== "*" && rule.server !== entry.server) continue;
    if (rule.tool !== undefined && rule.tool !== entry.tool) continue;
    if (rule.platform !== undefined && rule.platform !== place.platform) continue;
    if (rule.channel !== undefined && rule.channel !== place.channel) continue;
    const score =
      (rule.tool !== undefined ? 8 : 0) +
      (rule.server !== "*" ? 4 : 0) +
      (rule.channel !== undefined ? 2 : 0) +
      (rule.platform !== undefined ? 1 : 0);
    if (!best || score >= best.score) best = { score, mode: rule.mode };
  }
  if (best) return best.mode;
  if (place.platform === "console") return "always";
  return entry.annotations?.readOnlyHint === true ? "always" : "ask";
}

/** Whether the person who clicked may decide on a call the asker's message led to. */
export async function mayDecide(
  config: Config,
  place: CallPlace,
  asker: string,
  who: Interaction["user"],
  inGroups?: Interaction["inGroups"],
): Promise<boolean> {
  if (who.bot) return false;
  if (who.id === asker) return true;
  const groups = config.approvals.approvers.filter(
    (g) =>
      (g.platform === undefined || g.platform === place.platform) &&
      (g.channel === undefined || g.channel === place.channel),
  );
  if (groups.some((g) => g.users.includes(who.id))) return true;
  if (place.platform === "discord" && groups.some((g) => g.discordRoles.some((r) => who.roles?.includes(r))))
    return true;
  const slackGroups = place.platform === "slack" ? groups.flatMap((g) => g.slackUserGroups) : [];
  return slackGroups.length > 0 && inGroups !== undefined && (await inGroups(slackGroups));
}

/**
 * The organization an approval "for this thread" covers when given in a turn of this asker.
 * A Slack thread is keyed by the bot's workspace, yet in a Slack Connect channel its
 * people belong to two organizations: the asker's own team (`from.workspace`) scopes it.
 * A Discord thread lies in one guild and the terminal has one person: unscoped there.
 */
export function askerTeam(platform: Platform, from: Provenance | undefined): string | undefined {
  return platform === "slack" ? from?.workspace : undefined;
}

/** Whether the thread's approvals for its rest let `tool` run unasked in a turn of an asker of `team`. */
export function approvedForThread(
  settings: SessionSettings,
  tool: string,
  team: string | undefined,
): boolean {
  if (settings.approvedTools?.includes(tool)) return true;
  // An asker whose team is unknown is not taken to be of the approver's.
  if (team === undefined) return false;
  return settings.teamApprovedTools?.some((g) => g.tool === tool && g.team === team) ?? false;
}

/** Records `tools` as approved for the rest of the thread, for the people of `team` if it is known. */
export function grantForThread(
  settings: SessionSettings,
  tools: readonly string[],
  team: string | undefined,
): void {
  if (!tools.length) return;
  if (team === undefined) {
    settings.approvedTools = [...new Set([...(settings.approvedTools ?? []), ...tools])];
    return;
  }
  const grants = settings.teamApprovedTools ?? [];
  for (const tool of tools)
    if (!grants.some((g) => g.tool === tool && g.team === team)) grants.push({ tool, team });
  settings.teamApprovedTools = grants;
}

/**
 * Which calls run here, wait for a person, or may not run: the tool loop's gate for one
 * turn. `approved`: whether the thread approved a tool for its rest for this turn's asker,
 * as it is at each call; `canAsk`: whether anyone can be asked where the turn answers.
 */
export function callGate(
  deps: { hub: ToolHub; config: Config },
  place: CallPlace,
  approved: (tool: string) => boolean,
  canAsk: boolean,
): (call: ToolCall) => CallGate {
  return (call) => {
    // The offer answers its search itself; it runs no server's tool.
    if (call.name === SEARCH_TOOL) return "run";
    const entry = deps.hub.tools().find((t) => t.name === call.name);
    // Refused, not left to the hub: in a step that waits for approvals, a call let through
    // would run when the step resumes, by which time its server may be back, unasked.
    if (!entry) return { refuse: unknownTool(call.name) };
    const mode = approvalMode(deps.config, entry, place);
    if (mode === "never") return { refuse: NEVER_REASON };
    if (mode === "always" || approved(call.name)) return "run";
    return canAsk ? "ask" : { refuse: CANNOT_ASK_REASON };
  };
}
