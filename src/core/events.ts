import type { Artifact } from "./artifacts.js";
import type { UserFacingError } from "./errors.js";
import type { PendingStep, Usage } from "./messages.js";

/** What the agent tells an adapter's renderer, in order. Platform-neutral. */
export type AgentEvent =
  | { type: "status"; text: string }
  | { type: "text"; delta: string }
  | { type: "tool"; phase: "start"; server: string; tool: string }
  | { type: "tool"; phase: "end"; server: string; tool: string; ok: boolean; ms: number }
  | { type: "artifact"; artifact: Artifact }
  | { type: "done"; usage: Usage }
  /** The turn stops here until people decide on `step`'s calls; its text so far is final. */
  | { type: "waiting"; step: PendingStep; usage: Usage }
  | { type: "error"; error: UserFacingError };
