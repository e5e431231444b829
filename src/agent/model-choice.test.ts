import { describe, expect, it } from "vitest";
import { FunctionHub, ScriptedProvider } from "../../test/support/scripted.js";
import { configSchema } from "../config.js";
import type { Session, SessionRepository } from "../store/sessions.js";
import { Agent } from "./agent.js";

const agentWith = (allowed: string[]) =>
  new Agent({
    config: configSchema.parse({ llm: { model: "gpt-4o-mini" }, models: { allowed } }),
    hub: new FunctionHub({}),
    providerFor: () => new ScriptedProvider([]),
    sessions: {} as SessionRepository,
  });

const chose = (model?: string) => ({ settings: model ? { model } : {} }) as Session;

describe("the model a thread answers with", () => {
  it("is the one it chose while that one is allowed, else the configured one", () => {
    expect(agentWith(["gpt-4o"]).modelFor(chose("gpt-4o"))).toBe("gpt-4o");
    expect(agentWith(["gpt-4o"]).modelFor(chose())).toBe("gpt-4o-mini");
    // Taken off the list by the operator: the threads that chose it go back to the default.
    expect(agentWith([]).modelFor(chose("gpt-4o"))).toBe("gpt-4o-mini");
  });
});
