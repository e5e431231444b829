import type { WebClient } from "@slack/web-api";
import { describe, expect, it } from "vitest";
import type { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { AgentSessions } from "./agent-sessions.js";

const place = { channel: "C1", threadTs: "1.1", user: "U1" };
/** Runs each call at once: what is checked here is which calls are made, not their pacing. */
const unpaced = {
  scheduler: { as: (_lane: string, fn: () => Promise<unknown>) => fn() } as unknown as WriteScheduler,
};

function slack(opts: { refuse?: string; refuseThread?: (threadTs: string) => string | undefined } = {}) {
  const calls: string[] = [];
  let release: () => void = () => {};
  let gate: Promise<void> | undefined;
  const web = {
    agents: {
      sessions: {
        setStatus: async (a: { status: string; thread_ts: string }) => {
          calls.push(a.status);
          const refused = opts.refuse ?? opts.refuseThread?.(a.thread_ts);
          if (refused) throw Object.assign(new Error("refused"), { data: { error: refused } });
          await gate;
          return { ok: true };
        },
        rename: async (a: { title: string }) => {
          calls.push(`rename ${a.title}`);
          return { ok: true };
        },
      },
    },
  } as unknown as WebClient;
  return {
    web,
    calls,
    hold: () => {
      gate = new Promise((r) => {
        release = r;
      });
    },
    release: () => release(),
  };
}

describe("Slack agent sessions", () => {
  it("sends only the latest status of a thread while an earlier one is on its way", async () => {
    const s = slack();
    const sessions = new AgentSessions(s.web, true, unpaced);
    s.hold();
    const first = sessions.status(place, "processing");
    await sessions.status(place, "suspended");
    await sessions.status(place, "processing");
    await sessions.status(place, "active");
    s.release();
    await first;
    expect(s.calls).toEqual(["processing", "active"]);
  });

  it("has no session to move on or rename where none was started", async () => {
    const s = slack();
    const sessions = new AgentSessions(s.web, true, unpaced);
    await sessions.status(place, "active");
    await sessions.rename(place, "Title");
    expect(s.calls).toEqual([]);
    await sessions.status(place, "processing");
    await sessions.rename(place, "Title");
    expect(s.calls).toEqual(["processing", "rename Title"]);
  });

  it("moves on a session a dead process left working, whatever this process last sent it", async () => {
    const s = slack();
    const sessions = new AgentSessions(s.web, true, unpaced);
    await sessions.endLeft(place);
    // This process ended an earlier answer of the thread; the dead one began another since.
    const other = { ...place, threadTs: "2.2" };
    await sessions.status(other, "processing");
    await sessions.status(other, "active");
    await sessions.endLeft(other);
    expect(s.calls).toEqual(["active", "processing", "active", "active"]);
    expect(sessions.has(place)).toBe(true);
  });

  it("says whether Slack shows a thread's session as working once its status has gone, and only for that thread", async () => {
    const s = slack();
    const sessions = new AgentSessions(s.web, true, unpaced);
    s.hold();
    void sessions.status(place, "processing");
    const asked = sessions.working(place);
    expect(await sessions.working({ ...place, threadTs: "2.2" })).toBe(false);
    s.release();
    expect(await asked).toBe(true);
    await sessions.status(place, "active");
    expect(await sessions.working(place)).toBe(false);
  });

  it("stops asking for the rest of the process once Slack refuses sessions", async () => {
    const s = slack({ refuse: "missing_scope" });
    const sessions = new AgentSessions(s.web, true, unpaced);
    await sessions.status(place, "processing");
    await sessions.status({ ...place, threadTs: "2.2" }, "processing");
    expect(s.calls).toEqual(["processing"]);
    expect(sessions.on).toBe(false);
  });

  it("keeps sessions on when Slack refuses one thread's session for a reason of that thread", async () => {
    for (const error of ["channel_not_found", "not_in_channel", "thread_not_found", "user_not_in_channel"]) {
      const s = slack({ refuseThread: (ts) => (ts === "1.1" ? error : undefined) });
      const sessions = new AgentSessions(s.web, true, unpaced);
      await sessions.status(place, "processing");
      expect(sessions.on).toBe(true);
      expect(await sessions.working(place)).toBe(false);
      const next = { ...place, threadTs: "2.2" };
      await sessions.status(next, "processing");
      expect(await sessions.working(next)).toBe(true);
    }
  });

  it("turns sessions off for errors that say the app cannot use them anywhere", async () => {
    for (const error of ["missing_scope", "not_allowed_token_type", "unknown_method", "invalid_auth"]) {
      const sessions = new AgentSessions(slack({ refuse: error }).web, true, unpaced);
      await sessions.status(place, "processing");
      expect(sessions.on).toBe(false);
    }
  });
});
