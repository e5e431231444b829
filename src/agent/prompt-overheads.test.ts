import { describe, expect, it } from "vitest";
import { countTokens } from "./context.js";
import { PromptOverheads } from "./prompt-overheads.js";

describe("prompt overheads", () => {
  it("counts a thread's last instructions, pinned context and tool specs, and nothing for a thread not run here", () => {
    const overheads = new PromptOverheads();
    const system = "You are Switchboard, a helpful assistant in Slack. ".repeat(20);
    overheads.note("slack:T1:C1:1.1", { system, pinned: "Deploys happen on Tuesdays.", toolsTokens: 1_200 });
    expect(overheads.tokens("slack:T1:C1:1.1")).toBe(
      countTokens(system) + countTokens("Deploys happen on Tuesdays.") + 1_200,
    );
    expect(overheads.tokens("slack:T1:C1:9.9")).toBe(0);
    // The next turn's prompt replaces it.
    overheads.note("slack:T1:C1:1.1", { system: "short", toolsTokens: 10 });
    expect(overheads.tokens("slack:T1:C1:1.1")).toBe(countTokens("short") + 10);
  });
});
