import { describe, expect, it } from "vitest";
import { configSchema } from "../config.js";
import { Access, type Origin } from "./access.js";

const at = (over: Partial<Origin> = {}): Origin => ({
  platform: "slack",
  channel: "C1",
  user: { id: "U1" },
  dm: false,
  workspace: "T1",
  ...over,
});
const access = (a: Record<string, unknown>) => new Access(configSchema.parse({ access: a }));

describe("the access lists", () => {
  it("admit everyone everywhere when empty", () => {
    expect(access({}).admits(at())).toBe(true);
    expect(access({}).admits(at({ dm: true }))).toBe(true);
  });

  it("admit only listed people, or on Discord members with a listed role", () => {
    const a = access({ users: ["U1"], discordRoles: ["R1"] });
    expect(a.admits(at())).toBe(true);
    expect(a.admits(at({ user: { id: "U2" } }))).toBe(false);
    expect(a.admits(at({ platform: "discord", user: { id: "U2", roles: ["R1"] } }))).toBe(true);
    expect(a.admits(at({ platform: "discord", user: { id: "U2", roles: ["R2"] } }))).toBe(false);
    // Slack has no roles: a role list alone does not shut Slack out.
    expect(access({ discordRoles: ["R1"] }).admits(at({ user: { id: "U2" } }))).toBe(true);
  });

  it("admit only listed channels, workspaces and guilds", () => {
    const a = access({ channels: ["C1"], slackWorkspaces: ["T1"], discordGuilds: ["G1"] });
    expect(a.admits(at())).toBe(true);
    expect(a.admits(at({ channel: "C2" }))).toBe(false);
    expect(a.admits(at({ workspace: "T2" }))).toBe(false);
    expect(a.admits(at({ platform: "discord", workspace: "G2" }))).toBe(false);
    expect(a.admits(at({ platform: "discord", workspace: "G1" }))).toBe(true);
  });

  it("follow the DM policy: open, allowlist, off", () => {
    const dm = at({ dm: true, channel: "D1" });
    expect(access({ channels: ["C1"] }).admits(dm)).toBe(true);
    expect(access({ dm: "allowlist", users: ["U1"] }).admits(dm)).toBe(true);
    expect(access({ dm: "allowlist", users: ["U1"] }).admits({ ...dm, user: { id: "U2" } })).toBe(false);
    expect(access({ dm: "allowlist" }).admits(dm)).toBe(false);
    expect(access({ dm: "off" }).admits(dm)).toBe(false);
  });

  it("always admit the terminal", () => {
    expect(access({ users: ["nobody"], dm: "off" }).admits(at({ platform: "console" }))).toBe(true);
  });

  it("tell a refused person at most once an hour", () => {
    const a = access({ users: ["U9"] });
    expect(a.shouldTell(at(), 0)).toBe(true);
    expect(a.shouldTell(at(), 3599_000)).toBe(false);
    expect(a.shouldTell(at({ user: { id: "U2" } }), 1)).toBe(true);
    expect(a.shouldTell(at(), 3600_000)).toBe(true);
  });
});
