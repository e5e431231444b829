import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../../../test/emulators/slack/adapter-harness.js";
import type { SlackEmulatorOptions } from "../../../test/emulators/slack/index.js";
import { waitFor } from "../../../test/emulators/slack/index.js";
import { clickAction } from "../../../test/emulators/slack/interactive.js";
import type { Interaction } from "../../runtime/contract.js";
import { interactionId } from "../../runtime/interaction-ids.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** A harness whose workspace has the approvers' group S_OPS (carol and dana), and a message with buttons. */
async function workspace(emulator: SlackEmulatorOptions = {}) {
  h = await startHarness({ emulator });
  const harness = h;
  harness.emu.state.userGroups.set("S_OPS", ["U_DANA", "U_CAROL"]);
  const asked = harness.emu.mention("C1", "U_ALICE", "may I?");
  const [reply] = await waitFor(() => {
    const r = harness.emu.botReplies("C1", asked.ts);
    return r.length === 1 && r;
  });
  const lookups = () => harness.emu.api.calls.filter((c) => c.method === "usergroups.users.list");
  /** `user` clicks Approve: the interaction the runner was handed, with its `inGroups`. */
  const click = async (user: string): Promise<Required<Pick<Interaction, "inGroups">>> => {
    const seen = harness.runner.interactions.length;
    clickAction(harness.emu, {
      user,
      channel: "C1",
      messageTs: reply?.ts ?? "",
      actionId: interactionId("q1", "approve"),
      value: "approve",
    });
    const interaction = await waitFor(() => harness.runner.interactions[seen]);
    if (!interaction.inGroups) throw new Error("a Slack click carries no inGroups");
    return { inGroups: interaction.inGroups };
  };
  return { harness, click, lookups };
}

describe("Slack adapter: approvers given as user groups", () => {
  it("asks Slack for a group's members once for many access checks in a minute", async () => {
    const { click, lookups } = await workspace();
    const checks: boolean[] = [];
    for (let i = 0; i < 4; i++) {
      const carol = await click("U_CAROL");
      checks.push(await carol.inGroups(["S_OPS"]), await carol.inGroups(["S_OPS"]));
    }
    // Checked at once: the clicks share one lookup in flight.
    const bob = await click("U_BOB");
    checks.push(...(await Promise.all([bob.inGroups(["S_OPS"]), bob.inGroups(["S_OPS"])])));
    expect(checks).toEqual([...Array(8).fill(true), false, false]);
    expect(lookups().map((c) => c.params.usergroup)).toEqual(["S_OPS"]);
  });

  it("reads a group's members again once Slack says they changed (subteam_members_changed)", async () => {
    const { harness, click, lookups } = await workspace();
    const carol = await click("U_CAROL");
    expect(await carol.inGroups(["S_OPS"])).toBe(true);
    harness.emu.state.userGroups.set("S_OPS", ["U_DANA"]);
    harness.emu.deliverEvent({
      type: "subteam_members_changed",
      subteam_id: "S_OPS",
      team_id: "T1",
      date_previous_update: 1,
      date_update: 2,
      removed_users: ["U_CAROL"],
      removed_users_count: 1,
      event_ts: "2.000001",
    });
    await waitFor(async () => !(await carol.inGroups(["S_OPS"])));
    expect(lookups()).toHaveLength(2);
  });

  it("tells the person why they were not counted as an approver when Slack will not list the group", async () => {
    const { harness, click } = await workspace();
    harness.emu.api.refuse("usergroups.users.list", "missing_scope");
    const carol = await click("U_CAROL");
    expect(await carol.inGroups(["S_OPS"])).toBe(false);
    expect(harness.emu.state.ephemerals.filter((e) => e.user === "U_CAROL").map((e) => e.text)).toEqual([
      "I could not check whether you are in an approvers' user group, so you were not counted as an approver: Slack refused to list its members (missing_scope). Tell whoever runs me.",
    ]);
    // A refusal is not remembered: once Slack answers, the same person is an approver.
    harness.emu.api.allow("usergroups.users.list");
    expect(await carol.inGroups(["S_OPS"])).toBe(true);
  });

  it("waits out a 429 on a group's members and still counts the approver", async () => {
    // One lookup a Slack minute, and a Slack minute of one second.
    const { harness, click, lookups } = await workspace({
      rateLimits: { perMinute: { "usergroups.users.list": 1 }, speed: 60 },
    });
    harness.emu.state.userGroups.set("S_LEADS", ["U_ERIN"]);
    const dana = await click("U_DANA");
    expect(await dana.inGroups(["S_LEADS", "S_OPS"])).toBe(true);
    expect(lookups().map((c) => [c.params.usergroup, c.error ?? "ok"])).toEqual([
      ["S_LEADS", "ok"],
      ["S_OPS", "ratelimited"],
      ["S_OPS", "ok"],
    ]);
    expect(harness.emu.state.ephemerals.filter((e) => e.user === "U_DANA")).toEqual([]);
  });
});
