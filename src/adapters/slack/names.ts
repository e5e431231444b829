import { setTimeout as sleep } from "node:timers/promises";
import type { WebClient } from "@slack/web-api";
import { log } from "../../log.js";

/** How long a turn waits for the asker's display name before going on with their id. */
const NAME_WAIT_MS = 300;

/** Who a user is, by display name (cached); the id when Slack does not say. */
export class UserNames {
  private readonly names = new Map<string, string>();
  /** Name lookups in flight, so a person's many messages ask Slack once. */
  private readonly lookups = new Map<string, Promise<string>>();

  constructor(private readonly reads: WebClient) {}

  /** The names known so far (for mentions in text). */
  get known(): ReadonlyMap<string, string> {
    return this.names;
  }

  /**
   * A person's display name, for the prompt. A turn waits for it at most `NAME_WAIT_MS`:
   * users.info is Tier 4 (100 a minute), and a busy workspace's new people would
   * otherwise hold their answers behind its Retry-After. Past the wait the turn goes on
   * with the user id, and the name is remembered when it comes.
   */
  async of(id: string): Promise<string> {
    const known = this.names.get(id);
    if (known) return known;
    let lookup = this.lookups.get(id);
    if (!lookup) {
      lookup = this.lookUp(id).finally(() => this.lookups.delete(id));
      this.lookups.set(id, lookup);
    }
    return Promise.race([lookup, sleep(NAME_WAIT_MS, id, { ref: false })]);
  }

  private async lookUp(id: string): Promise<string> {
    try {
      const res = await this.reads.users.info({ user: id });
      const u = res.user;
      const name = u?.profile?.display_name || u?.real_name || u?.name || id;
      this.names.set(id, name);
      return name;
    } catch (err) {
      log.debug({ err, user: id }, "users.info failed");
      return id;
    }
  }
}
