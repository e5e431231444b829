import { type Session, SessionRepository } from "../store/sessions.js";
import type { Lease } from "../store/state.js";

/* A process that stalls under a thread's lock (a long GC pause, a store that answers late): the tests of fenced writes share it. */

type StallPoint = "read" | "save" | "reset";

interface Stall {
  reached: () => void;
  go: Promise<void>;
}

/** Sessions whose next read, save or reset stalls until `go`. */
export class StallingSessions extends SessionRepository {
  private readonly stalls: Partial<Record<StallPoint, Stall>> = {};

  /** Resolves once the next read has been made and is stalled; it goes on at `go`. */
  stallNextRead(go: Promise<void>): Promise<void> {
    return this.arm("read", go);
  }

  /**
   * Resolves once the next save has been called and is stalled, before it writes anything:
   * where a saver that checked its lease first is between that check and its write.
   */
  stallNextSave(go: Promise<void>): Promise<void> {
    return this.arm("save", go);
  }

  /** As `stallNextSave`, for the next /new. */
  stallNextReset(go: Promise<void>): Promise<void> {
    return this.arm("reset", go);
  }

  override async get(key: string): Promise<Session | undefined> {
    const session = await super.get(key);
    await this.pass("read");
    return session;
  }

  override async save(session: Session, lease?: Lease): Promise<void> {
    await this.pass("save");
    return super.save(session, lease);
  }

  override async reset(key: string, lease?: Lease): Promise<Session> {
    await this.pass("reset");
    return super.reset(key, lease);
  }

  private arm(what: StallPoint, go: Promise<void>): Promise<void> {
    return new Promise((reached) => {
      this.stalls[what] = { reached, go };
    });
  }

  private async pass(what: StallPoint): Promise<void> {
    const stall = this.stalls[what];
    delete this.stalls[what];
    if (!stall) return;
    stall.reached();
    await stall.go;
  }
}

export function gate(): { open: () => void; passed: Promise<void> } {
  let open!: () => void;
  const passed = new Promise<void>((r) => {
    open = r;
  });
  return { open, passed };
}
