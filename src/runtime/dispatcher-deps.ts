import type { Agent } from "../agent/agent.js";
import type { Config } from "../config.js";
import type { OAuthSignIns } from "../mcp/oauth/sign-ins.js";
import type { ToolHub } from "../mcp/types.js";
import type { ApprovalBook } from "../store/approvals.js";
import type { Dedupe } from "../store/dedupe.js";
import type { FeedbackBook } from "../store/feedback.js";
import type { FormBook } from "../store/forms.js";
import type { ThreadLock } from "../store/locks.js";
import type { SessionRepository } from "../store/sessions.js";
import type { StopRequests } from "../store/stop-requests.js";
import type { TurnLedger } from "../store/turns.js";
import type { UsageLedger } from "../store/usage.js";
import type { WaitingMessages } from "../store/waiting-messages.js";
import type { Budgets } from "./budgets.js";
import type { VoteListener } from "./feedback.js";
import type { Meter } from "./metering.js";
import type { TurnObserver } from "./turn-log.js";

/** What the dispatcher is built from: the store's books, the agent, the hub and the config. */
export interface DispatcherDeps {
  agent: Agent;
  sessions: SessionRepository;
  ledger: TurnLedger;
  /** Messages waiting for their thread, kept so that a crash does not lose them; none in most unit tests. */
  waiting?: WaitingMessages;
  lock: ThreadLock;
  dedupe: Dedupe;
  hub: ToolHub;
  config: Config;
  /** Tool approvals waiting for people (see runtime/approvals). */
  approvals: ApprovalBook;
  /** Servers' questions to people during tool calls (see runtime/forms); without it servers cannot ask. */
  forms?: FormBook;
  observer?: TurnObserver;
  /** Charges each turn's model calls to its asker (usage and cost); none in unit tests. */
  meter?: Meter;
  /** Daily caps checked before a turn asks the model. */
  budgets?: Budgets;
  /** Recorded usage, for the usage command. */
  usage?: UsageLedger;
  /** Ratings of answers (👍 / 👎 under each finished one); none in unit tests. */
  feedback?: FeedbackBook;
  onVote?: VoteListener;
  /** Sign-ins of the tool servers that use OAuth (the connect and disconnect commands). */
  oauth?: OAuthSignIns;
  /** Stops that reach another replica than the one writing the answer; none in unit tests. */
  stops?: StopRequests;
}
