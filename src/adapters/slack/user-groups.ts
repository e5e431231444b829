import type { App } from "@slack/bolt";
import { ErrorCode, type WebClient } from "@slack/web-api";
import { log } from "../../log.js";
import { WriteDropped } from "../../runtime/scheduler/write-scheduler.js";

/**
 * How long a group's members are trusted once read. usergroups.users.list is Tier 2 (20
 * a minute for the whole workspace): asked at every approval click and Stop, a busy
 * approvals queue would meet its wall, and the clicks behind it wait out the Retry-After.
 * The price, chosen knowingly: someone removed from an approvers' group can still decide
 * for up to this long. Slack's `subteam_members_changed` ends that at once, for an app
 * that subscribes to it (see `listen`).
 */
const MEMBERS_TTL_MS = 60_000;
/** Groups remembered at most; they come from the config's approvers, so few are expected. */
const MAX_GROUPS = 1_000;

/** What a person is told when a group could not be read; they are then no approver this time. */
function unreadSentence(err: unknown): string {
  const limited =
    err instanceof WriteDropped ||
    (err as { code?: string } | undefined)?.code === ErrorCode.RateLimitedError;
  const refusal = (err as { data?: { error?: string } } | undefined)?.data?.error;
  const why = limited
    ? "Slack limits how often I may ask, so try again in a minute."
    : `Slack refused to list its members (${refusal ?? "no answer"}). Tell whoever runs me.`;
  return `I could not check whether you are in an approvers' user group, so you were not counted as an approver: ${why}`;
}

/** The members of Slack user groups (usergroups.users.list, scope usergroups:read), cached. */
export class UserGroups {
  private readonly members = new Map<string, { users: ReadonlySet<string>; at: number }>();
  /** Lookups in flight, so that clicks at once share one call. */
  private readonly lookups = new Map<string, Promise<ReadonlySet<string>>>();
  /** Counts `forget`s: a lookup that was in flight across one does not store what it read. */
  private forgotten = 0;

  /** `reads`: the client that paces reads within their tier (see app.ts). */
  constructor(private readonly reads: WebClient) {}

  /**
   * Whether `user` is a member of one of `groups`. A group Slack would not list (a 429, a
   * refusal) counts as one they are not in, and `tell` says why to them: otherwise an
   * approver hears only that they may not decide, as if they were no approver at all.
   */
  async has(user: string, groups: string[], tell: (text: string) => Promise<void>): Promise<boolean> {
    let failure: unknown;
    for (const group of groups) {
      try {
        if ((await this.of(group)).has(user)) return true;
      } catch (err) {
        log.warn(
          { err, usergroup: group },
          "could not read a user group's members; not counted as its member",
        );
        failure ??= err;
      }
    }
    if (failure !== undefined)
      await tell(unreadSentence(failure)).catch((err: unknown) =>
        log.warn({ err, user }, "could not say why a user group was not read"),
      );
    return false;
  }

  /** Forgets what was read of `group`: its members changed. */
  forget(group: string): void {
    this.members.delete(group);
    this.lookups.delete(group);
    this.forgotten += 1;
  }

  /**
   * Slack says when a group's members change, to an app subscribed to
   * `subteam_members_changed` (bot event, scope usergroups:read). Without it, what was read
   * holds for MEMBERS_TTL_MS.
   */
  listen(app: App): void {
    app.event("subteam_members_changed", async ({ event }) => {
      this.forget(event.subteam_id);
    });
  }

  private of(group: string): Promise<ReadonlySet<string>> {
    const known = this.members.get(group);
    if (known && Date.now() - known.at < MEMBERS_TTL_MS) return Promise.resolve(known.users);
    let lookup = this.lookups.get(group);
    if (!lookup) {
      const started: Promise<ReadonlySet<string>> = this.lookUp(group).finally(() => {
        if (this.lookups.get(group) === started) this.lookups.delete(group);
      });
      lookup = started;
      this.lookups.set(group, lookup);
    }
    return lookup;
  }

  private async lookUp(group: string): Promise<ReadonlySet<string>> {
    const forgotten = this.forgotten;
    const res = await this.reads.usergroups.users.list({ usergroup: group });
    const users: ReadonlySet<string> = new Set(res.users ?? []);
    if (forgotten !== this.forgotten) return users;
    this.members.delete(group);
    if (this.members.size >= MAX_GROUPS) {
      const oldest = this.members.keys().next().value;
      if (oldest !== undefined) this.members.delete(oldest);
    }
    this.members.set(group, { users, at: Date.now() });
    return users;
  }
}
