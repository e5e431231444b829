import { describe, expect, it } from "vitest";
import { callTools, FunctionHub, ScriptedProvider, say } from "../../../test/support/scripted.js";
import { type ResumedStep, runToolLoop } from "../../agent/loop.js";
import { SEARCH_TOOL } from "../../agent/tool-offer.js";
import { configSchema } from "../../config.js";
import type { ToolEntry } from "../../mcp/types.js";
import { approvalMode, approvedForThread, askerTeam, callGate, grantForThread, mayDecide } from "./policy.js";
import { unknownTool } from "./questions.js";

const tool = (server: string, name: string, annotations?: ToolEntry["annotations"]): ToolEntry => ({
  name: `${server}__${name}`,
  server,
  tool: name,
  description: "",
  inputSchema: { type: "object" },
  ...(annotations ? { annotations } : {}),
});
const slack = { platform: "slack" as const, channel: "C1" };

describe("which tool calls ask first", () => {
  const defaults = configSchema.parse({});

  it("runs read-only tools and asks for destructive ones and those without annotations", () => {
    expect(approvalMode(defaults, tool("fs", "read_file", { readOnlyHint: true }), slack)).toBe("always");
    expect(approvalMode(defaults, tool("fs", "write_file", { destructiveHint: true }), slack)).toBe("ask");
    expect(approvalMode(defaults, tool("fs", "mystery"), slack)).toBe("ask");
    expect(
      approvalMode(defaults, tool("mem", "create", { readOnlyHint: false, destructiveHint: false }), slack),
    ).toBe("ask");
  });

  it("runs every tool in the terminal unless a rule says otherwise", () => {
    const console = { platform: "console" as const, channel: "local" };
    expect(approvalMode(defaults, tool("fs", "write_file", { destructiveHint: true }), console)).toBe(
      "always",
    );
    const config = configSchema.parse({
      approvals: { rules: [{ server: "fs", platform: "console", mode: "never" }] },
    });
    expect(approvalMode(config, tool("fs", "write_file"), console)).toBe("never");
  });

  it("lets the most specific rule win: tool over server over channel over platform, the later among equals", () => {
    const config = configSchema.parse({
      approvals: {
        rules: [
          { server: "*", mode: "never" },
          { server: "fs", mode: "always" },
          { server: "fs", channel: "C1", mode: "ask" },
          { server: "fs", tool: "write_file", mode: "never" },
          { server: "fs", tool: "write_file", mode: "ask" },
          { server: "fs", tool: "write_file", platform: "slack", channel: "C2", mode: "always" },
        ],
      },
    });
    expect(approvalMode(config, tool("other", "x", { readOnlyHint: true }), slack)).toBe("never");
    expect(
      approvalMode(config, tool("fs", "read_file", { readOnlyHint: true }), { ...slack, channel: "C9" }),
    ).toBe("always");
    expect(approvalMode(config, tool("fs", "read_file"), slack)).toBe("ask");
    expect(approvalMode(config, tool("fs", "write_file"), slack)).toBe("ask");
    expect(approvalMode(config, tool("fs", "write_file"), { ...slack, channel: "C2" })).toBe("always");
    expect(approvalMode(config, tool("fs", "write_file"), { platform: "discord", channel: "C2" })).toBe(
      "ask",
    );
  });

  it("refuses a rule with an unknown mode, naming the field", () => {
    const parsed = configSchema.safeParse({ approvals: { rules: [{ server: "fs", mode: "sometimes" }] } });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.path).toEqual(["approvals", "rules", 0, "mode"]);
  });
});

describe("who may decide", () => {
  const config = configSchema.parse({
    approvals: {
      approvers: [
        { users: ["U_ADMIN"] },
        { platform: "discord", discordRoles: ["R_OPS"] },
        { platform: "slack", channel: "C1", slackUserGroups: ["S_ONCALL"] },
      ],
    },
  });

  it("lets the asker and listed users decide, never a bot", async () => {
    expect(await mayDecide(config, slack, "U_ASKER", { id: "U_ASKER" })).toBe(true);
    expect(await mayDecide(config, slack, "U_ASKER", { id: "U_ADMIN" })).toBe(true);
    expect(await mayDecide(config, slack, "U_ASKER", { id: "U_OTHER" })).toBe(false);
    expect(await mayDecide(config, slack, "U_ASKER", { id: "U_ASKER", bot: true })).toBe(false);
  });

  it("lets Discord members with an approver role decide, only on Discord", async () => {
    const discord = { platform: "discord" as const, channel: "D1" };
    expect(await mayDecide(config, discord, "A", { id: "B", roles: ["R_OPS"] })).toBe(true);
    expect(await mayDecide(config, discord, "A", { id: "B", roles: ["R_OTHER"] })).toBe(false);
    expect(await mayDecide(config, slack, "A", { id: "B", roles: ["R_OPS"] })).toBe(false);
  });

  it("asks Slack about user groups only in the channel they approve for", async () => {
    const asked: string[][] = [];
    const inGroups = async (groups: string[]) => {
      asked.push(groups);
      return groups.includes("S_ONCALL");
    };
    expect(await mayDecide(config, slack, "A", { id: "B" }, inGroups)).toBe(true);
    expect(await mayDecide(config, { ...slack, channel: "C2" }, "A", { id: "B" }, inGroups)).toBe(false);
    expect(asked).toEqual([["S_ONCALL"]]);
  });
});

describe("the gate of a turn's calls", () => {
  const config = configSchema.parse({});

  it("refuses a tool no server offers now, so that approving its step's other call never runs it later", async () => {
    const fns: Record<string, () => string> = { fs__write_file: () => "written" };
    const hub = new FunctionHub(fns);
    const gate = callGate({ hub, config }, slack, () => false, true);
    const loop = (provider: ScriptedProvider, resumed?: ResumedStep) =>
      drain(
        runToolLoop(
          {
            provider,
            hub,
            model: "scripted",
            maxSteps: 5,
            repeatLimit: 3,
            signal: new AbortController().signal,
            gate,
          },
          {
            system: "sys",
            messages: [{ role: "user", content: "write it and merge" }],
            tools: () => hub.tools(),
          },
          resumed,
        ),
      );
    // github is down when the step is gated: its call is not in the catalog.
    const waited = await loop(
      new ScriptedProvider([callTools(["fs__write_file", { path: "a" }], ["github__merge_pr", { pr: 7 }])]),
    );
    expect(waited.pending?.asks).toEqual(["call_fs__write_file_0"]);
    expect(waited.pending?.settled).toEqual([
      expect.objectContaining({
        name: "github__merge_pr",
        content: unknownTool("github__merge_pr"),
        isError: true,
      }),
    ]);
    // github is back before anyone clicks; the write alone is approved.
    fns.github__merge_pr = () => "merged";
    const step = waited.pending;
    if (!step) throw new Error("the step did not wait");
    await loop(new ScriptedProvider([say("Written.")]), {
      step,
      verdicts: { call_fs__write_file_0: { run: true } },
    });
    expect(hub.calls.map((c) => c.name)).toEqual(["fs__write_file"]);
  });

  it("lets the tool search through, which the turn's offer answers itself", () => {
    const gate = callGate({ hub: new FunctionHub({}), config }, slack, () => false, true);
    expect(gate({ id: "c1", name: SEARCH_TOOL, arguments: { query: "files" } })).toBe("run");
  });
});

describe("what an approval for the rest of a thread covers", () => {
  it("still runs a tool an old session approved for the thread (a plain entry) for anyone, of any team", () => {
    const settings = { approvedTools: ["fs__write_file"] };
    expect(approvedForThread(settings, "fs__write_file", "T_OTHER")).toBe(true);
    expect(approvedForThread(settings, "fs__write_file", undefined)).toBe(true);
    expect(approvedForThread(settings, "fs__delete", "T_OTHER")).toBe(false);
  });

  it("covers only the people of the asker's Slack team when approved in a Slack turn", () => {
    const settings = {};
    grantForThread(settings, ["fs__write_file"], "T_HOME");
    grantForThread(settings, ["fs__write_file"], "T_HOME");
    expect(settings).toEqual({ teamApprovedTools: [{ tool: "fs__write_file", team: "T_HOME" }] });
    expect(approvedForThread(settings, "fs__write_file", "T_HOME")).toBe(true);
    expect(approvedForThread(settings, "fs__write_file", "T_OTHER")).toBe(false);
    // An asker whose team is not known is not assumed to be of it.
    expect(approvedForThread(settings, "fs__write_file", undefined)).toBe(false);
  });

  it("stays unscoped on Discord and in the terminal, where a thread holds one guild or one person", () => {
    const settings = {};
    grantForThread(settings, ["fs__write_file"], askerTeam("discord", { dm: false, workspace: "G1" }));
    grantForThread(settings, ["fs__move"], askerTeam("console", undefined));
    expect(settings).toEqual({ approvedTools: ["fs__write_file", "fs__move"] });
    expect(askerTeam("slack", { dm: false, workspace: "T_HOME" })).toBe("T_HOME");
  });

  it("lets a call of a tool approved for the asker's team run unasked, and asks others", () => {
    const hub = new FunctionHub({ fs__write_file: () => "written" });
    const settings = { teamApprovedTools: [{ tool: "fs__write_file", team: "T_HOME" }] };
    const call = { id: "c1", name: "fs__write_file", arguments: {} };
    const gateFor = (team: string) =>
      callGate(
        { hub, config: configSchema.parse({}) },
        slack,
        (t) => approvedForThread(settings, t, team),
        true,
      );
    expect(gateFor("T_HOME")(call)).toBe("run");
    expect(gateFor("T_OTHER")(call)).toBe("ask");
  });
});

async function drain<T>(gen: AsyncGenerator<unknown, T>): Promise<T> {
  let next = await gen.next();
  while (!next.done) next = await gen.next();
  return next.value;
}
