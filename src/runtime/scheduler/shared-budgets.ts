import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { log } from "../../log.js";
import type { Lease, StateStore } from "../../store/state.js";
import {
  type BucketLimit,
  type BucketView,
  LocalBudgets,
  NO_429S,
  NOTHING,
  type WritePolicy,
} from "./budgets.js";

/** How often a process publishes what it spent and reads what the others did. */
export const BUDGET_SYNC_MS = 250;
/** Windows at least this long are split strictly between the processes (see `share`). */
const STRICT_WINDOW_MS = 30_000;
/** How long a process's record outlives its last publication: the longest window it describes (Slack's minute). */
const RECORD_TTL_MS = 65_000;
/**
 * A claim older than this is ignored: a live process republishes its claims every sync,
 * so only a stopped or stalled one's claim gets this old, and it must not hold a
 * long window's slots for the life of its record.
 */
const CLAIM_TTL_MS = 4 * BUDGET_SYNC_MS;
/** How soon a write waiting for a claim looks again, once a sync has been asked for it. */
const CLAIM_RETRY_MS = 10;
/**
 * ms until a sync `due` ms away; one overdue (failed, or the store slow) is looked for soon,
 * then a period apart: waiting 1 ms, the scheduler weighed every waiting write each ms.
 */
const untilDue = (due: number) => (due > 0 ? due : Math.min(BUDGET_SYNC_MS, Math.max(CLAIM_RETRY_MS, -due)));
/** A long window asked for within this long is still wanted: claimed at each sync. */
const WANTED_MS = 2 * BUDGET_SYNC_MS;
/**
 * How long the claim lock is held at most: a read, a few sums and a write take
 * milliseconds, so only a process that stopped while holding it makes the others wait
 * this long, and only for their claims.
 */
const CLAIM_LOCK_MS = 2_000;
/** Tries for the claim lock per sync, a few ms apart; then this sync claims nothing. */
const CLAIM_LOCK_TRIES = 5;
const CLAIM_LOCK_RETRY_MS = 4;

/** What one process spent and paused lately, as the others read it. */
interface BudgetRecord {
  /** When each bucket's writes were granted, within their window. */
  spent: Record<string, number[]>;
  /** Until when each paused bucket is paused. */
  paused: Record<string, number>;
  /** Buckets a 429 showed to be limited. */
  learned: string[];
  /** Per wide bucket, its narrower buckets that met a 429 lately, and when. */
  below?: Record<string, Record<string, number>>;
  /** Per long-window bucket: how many writes this process may still grant before its next publication. */
  claims?: Record<string, number>;
  /** When it was published (claims expire, see CLAIM_TTL_MS). */
  at?: number;
  /** The process stopped: its writes count until their windows pass, but it takes no share. */
  closed?: boolean;
}

/**
 * The budgets of a platform connection that several replicas share (one Slack app, one
 * Discord bot): each process keeps its own sliding windows in memory, as `LocalBudgets`,
 * and publishes them to the store every 250 ms (at once after a 429); the others' writes
 * and pauses count in its own waits as soon as it has read them. The hot path never waits
 * on the store: two replicas may both take the last slot of a short window within one
 * sync, and the platform's 429 then pauses the bucket for both. A long window's slot (a
 * Slack tier's minute) does not come back for a minute, so there a process grants only
 * what it claimed: at each sync it reads the others' records, takes its share of what
 * their writes and their claims leave, and publishes that claim with its own writes,
 * holding the store's claim lock from the read to the write. Without it, replicas syncing
 * at the same moment each read the others' records before the others' new writes and
 * claims were in them, and together granted more of a minute than it holds.
 */
export class SharedBudgets extends LocalBudgets {
  private readonly owner = randomUUID();
  private others = new Map<string, BucketView>();
  private othersBelow = new Map<string, Map<string, number>>();
  /** Published at once, spent or not: the others count this process in their shares from the start. */
  private dirty = true;
  private joined = false;
  private closed = false;
  private publishedAt = 0;
  /** Writes granted here since the shares were last computed, per bucket. */
  private granted = new Map<string, number>();
  /** Long-window buckets a write here wanted lately, and when: only those are claimed. */
  private wanted = new Map<string, number>();
  /** Per long-window bucket: what this process claimed at its last sync (its allowance there). */
  private claimed = new Map<string, number>();
  /** Per long-window bucket: what the others claimed and may still grant. */
  private othersClaims = new Map<string, number>();
  /** Whether the last publication held claims (then the next one must, to withdraw them). */
  private publishedClaims = false;
  /** Processes sharing these budgets at the last sync, this one included. */
  private sharing = 1;
  /** This process's place among them, by id: whose turn a remainder is (see `share`). */
  private rank = 0;
  /** Per short-window bucket with a known limit: how many writes this process may grant before the next sync. */
  private allowance = new Map<string, number>();
  private nextSync = 0;
  private timer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> | undefined;

  constructor(
    policy: WritePolicy,
    private readonly state: StateStore,
    private readonly name: string,
  ) {
    super(policy);
    this.timer = setInterval(() => void this.sync(), BUDGET_SYNC_MS);
    this.timer.unref();
  }

  /** Stops syncing; its record stays for the others until it expires (its writes still count). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.syncing;
    // Nothing more will be granted here: the last record withdraws its claims and its share.
    this.wanted.clear();
    this.closed = true;
    this.dirty = true;
    await this.sync();
  }

  override spend(buckets: readonly string[], now: number): void {
    super.spend(buckets, now);
    for (const key of buckets) this.granted.set(key, (this.granted.get(key) ?? 0) + 1);
    this.dirty = true;
    // No timer publishes any more: a straggler's write is told to the others at once.
    if (this.closed) void this.sync();
  }

  /** Published at the next sync; the share it used stays used until then (the others may have counted it). */
  override refund(buckets: readonly string[], grantedAt: number): void {
    super.refund(buckets, grantedAt);
    this.dirty = true;
  }

  /**
   * Between two syncs each process grants at most its share of what a known budget has
   * left: a burst that reaches three replicas at once (two hundred threads starting) then
   * spends the budget once between them, not three times before anyone has heard of it.
   */
  override wait(key: string, reserve: number, now: number): number {
    const wait = super.wait(key, reserve, now);
    // Closed, it takes no share and syncs no more, so a share would never renew: what it
    // still writes (a straggler after the drain) is held to the windows it knows.
    if (wait > 0 || this.sharing <= 1 || this.closed) return wait;
    const limit = this.limitFor(key);
    if (!limit) return 0;
    const mine = this.granted.get(key) ?? 0;
    if (limit.windowMs >= STRICT_WINDOW_MS) return this.waitForClaim(key, limit, mine, now);
    if (mine === 0) return 0;
    const allowance = this.allowance.get(key) ?? this.share(limit, limit.capacity, now);
    if (mine < allowance) return 0;
    return untilDue(this.nextSync - now);
  }

  /**
   * A long window: what this process claimed, and one write more while the window has room
   * for two per process, so that the first write after a quiet spell (a native stream's
   * start, which is dropped rather than delayed) need not wait for a sync. The others'
   * unpublished writes are at most their claims and one such write each per sync; near
   * the window's end only claims are granted.
   */
  private waitForClaim(key: string, limit: BucketLimit, mine: number, now: number): number {
    const since = this.wanted.get(key);
    this.wanted.set(key, now);
    // Newly wanted: claimed now rather than at the next tick; a sync already under way
    // may have decided not to claim before this write wanted anything, so one follows it.
    const fresh = since === undefined || since < now - WANTED_MS;
    if (fresh) void (this.syncing ? this.syncing.then(() => this.sync()) : this.sync());
    if (mine < (this.claimed.get(key) ?? 0)) return 0;
    if (mine === 0 && this.left(key, limit, now) >= 2 * this.sharing) return 0;
    if (fresh) return CLAIM_RETRY_MS;
    const due = this.nextSync - now;
    return untilDue(this.syncing ? Math.min(CLAIM_RETRY_MS, due) : due);
  }

  /** What a bucket's window has left at `now`, after every process's writes and the others' claims. */
  private left(key: string, limit: BucketLimit, now: number): number {
    const inWindow = (at: number) => at + limit.windowMs > now;
    const sent =
      (this.ownView(key)?.sent.filter(inWindow).length ?? 0) +
      (this.others.get(key)?.sent.filter(inWindow).length ?? 0);
    return limit.capacity - sent - (this.othersClaims.get(key) ?? 0);
  }

  /**
   * This process's part of `left` until the next sync: an even split, rounded down. With
   * fewer slots left than processes, a short window's slot comes back within seconds, so
   * every process may take one (a rare 429 costs less than waiting a turn for it); a long
   * window's (Slack's minute) does not, so the slots go to as many processes as there are
   * slots, which ones turning with every sync period (their clocks agree to far less than
   * a period; near a period's edge two may still both hold one).
   */
  private share(limit: BucketLimit, left: number, now: number): number {
    const even = Math.floor(left / this.sharing);
    if (even > 0 || limit.windowMs < STRICT_WINDOW_MS) return Math.max(1, even);
    const turn = Math.floor(now / BUDGET_SYNC_MS);
    return (this.rank + turn) % this.sharing < left ? 1 : 0;
  }

  override pause(bucket: string, ms: number, now: number): void {
    super.pause(bucket, ms, now);
    this.dirty = true;
    // A 429 is news the others need before their next write, not at the next tick.
    void this.sync();
  }

  protected override extra(bucket: string): BucketView {
    return this.others.get(bucket) ?? NOTHING;
  }

  protected override extraBelow(wide: string): ReadonlyMap<string, number> {
    return this.othersBelow.get(wide) ?? NO_429S;
  }

  override limitedWithin(wide: string, narrow: string, now: number): boolean {
    const spent = super.limitedWithin(wide, narrow, now);
    this.dirty = true;
    void this.sync();
    return spent;
  }

  /** Publishes this process's record when it changed, then reads the others'. One at a time. */
  sync(): Promise<void> {
    this.syncing ??= this.exchange()
      .catch((err: unknown) => {
        // Nothing renewed: the next try is the interval's, a period from now.
        this.nextSync = Date.now() + BUDGET_SYNC_MS;
        log.debug({ err, budgets: this.name }, "write budgets not shared this time");
      })
      .finally(() => {
        this.syncing = undefined;
      });
    return this.syncing;
  }

  /**
   * Reads the others' records, computes this process's shares from them, then publishes
   * its own record with its claims: in that order, and under the claim lock while it
   * claims, a claim is counted by every process that reads after it, and nobody's share
   * counts on slots another has claimed.
   */
  private async exchange(): Promise<void> {
    const lease = this.stillWanted(Date.now()) ? await this.claimLock() : undefined;
    try {
      await this.readAndPublish(lease !== undefined);
    } finally {
      if (lease) await this.state.releaseLock(lease).catch(() => undefined);
    }
  }

  /** The claim lock, or undefined when another process kept it through every try. */
  private async claimLock(): Promise<Lease | undefined> {
    for (let attempt = 1; ; attempt++) {
      const lease = await this.state.acquireLock(`budget-claims:${this.name}`, CLAIM_LOCK_MS, this.owner);
      if (lease || attempt === CLAIM_LOCK_TRIES) return lease;
      await sleep(CLAIM_LOCK_RETRY_MS * attempt);
    }
  }

  private async readAndPublish(mayClaim: boolean): Promise<void> {
    const list = `budgets:${this.name}`;
    const members = (await this.state.listMembers(list)).filter((m) => m !== this.owner);
    const records = await Promise.all(members.map((m) => this.state.get<BudgetRecord>(this.recordKey(m))));
    const now = Date.now();
    const others = new Map<string, BucketView>();
    const below = new Map<string, Map<string, number>>();
    const claims = new Map<string, number>();
    records.forEach((record, i) => {
      if (!record) {
        void this.state.listRemove(list, members[i]!).catch(() => undefined);
        return;
      }
      for (const [bucket, sent] of Object.entries(record.spent)) this.view(others, bucket).sent.push(...sent);
      for (const [bucket, until] of Object.entries(record.paused)) {
        const v = this.view(others, bucket);
        v.pausedUntil = Math.max(v.pausedUntil, until);
      }
      for (const bucket of record.learned) this.view(others, bucket).learned = true;
      for (const [wide, parts] of Object.entries(record.below ?? {})) {
        const map = below.get(wide) ?? new Map<string, number>();
        for (const [narrow, at] of Object.entries(parts)) map.set(narrow, Math.max(map.get(narrow) ?? 0, at));
        below.set(wide, map);
      }
      if ((record.at ?? 0) + CLAIM_TTL_MS > now) {
        for (const [bucket, n] of Object.entries(record.claims ?? {}))
          claims.set(bucket, (claims.get(bucket) ?? 0) + n);
      }
    });
    for (const v of others.values()) v.sent.sort((a, b) => a - b);
    this.others = others;
    this.othersBelow = below;
    this.othersClaims = claims;
    const live = members.filter((_, i) => records[i] && !records[i].closed);
    this.sharing = 1 + live.length;
    this.rank = [...live, this.owner].sort().indexOf(this.owner);
    // From here to the record's snapshot nothing awaits: the shares, the claims and the
    // writes the record lists are one moment's.
    this.granted = new Map();
    // Also while no write comes: an idle process's record, and the walk over its buckets, shrink too.
    this.forgetIdle(now);
    this.allowance = this.allowances(now);
    // Without the lock, whatever this process claimed before is withdrawn, not renewed.
    this.claimed = mayClaim ? this.claims(now) : new Map();
    const claiming = this.claimed.size > 0;
    // Also published now and then while idle, so that its record (and its place in the shares) lives on.
    if (this.dirty || claiming || this.publishedClaims || now - this.publishedAt > RECORD_TTL_MS / 2) {
      this.dirty = false;
      this.publishedAt = now;
      this.publishedClaims = claiming;
      await this.state.set(this.recordKey(this.owner), this.snapshot(now), RECORD_TTL_MS);
      if (!this.joined) {
        await this.state.listAdd(list, this.owner);
        this.joined = true;
      }
    }
    this.nextSync = Date.now() + BUDGET_SYNC_MS;
  }

  /**
   * Each short window's share for this process until the next sync: what is left in its
   * window, split. A limit learned from a 429 (here or by another replica) is known too.
   */
  private allowances(now: number): Map<string, number> {
    const out = new Map<string, number>();
    const keys = new Set([...[...this.own()].map(([k]) => k), ...this.others.keys()]);
    for (const key of keys) {
      const limit = this.limitFor(key);
      if (!limit || limit.windowMs >= STRICT_WINDOW_MS) continue;
      out.set(key, this.share(limit, this.left(key, limit, now), now));
    }
    return out;
  }

  /** Whether a write here wanted a long window lately (those no longer wanted are forgotten). */
  private stillWanted(now: number): boolean {
    for (const [key, at] of this.wanted) if (at < now - WANTED_MS) this.wanted.delete(key);
    return this.wanted.size > 0;
  }

  /** Each long window that a write here wanted lately: its share of what the others left unclaimed. */
  private claims(now: number): Map<string, number> {
    const out = new Map<string, number>();
    for (const key of this.wanted.keys()) {
      const limit = this.limitFor(key);
      if (!limit) continue;
      const share = this.share(limit, this.left(key, limit, now), now);
      if (share > 0) out.set(key, share);
    }
    return out;
  }

  private view(map: Map<string, BucketView>, bucket: string): BucketView {
    let v = map.get(bucket);
    if (!v) {
      v = { sent: [], pausedUntil: 0, learned: false };
      map.set(bucket, v);
    }
    return v;
  }

  private snapshot(now: number): BudgetRecord {
    const record: BudgetRecord = { spent: {}, paused: {}, learned: [], below: {}, at: now };
    if (this.closed) record.closed = true;
    if (this.claimed.size) record.claims = Object.fromEntries(this.claimed);
    for (const [wide, parts] of this.ownBelow()) record.below![wide] = Object.fromEntries(parts);
    for (const [bucket, b] of this.own()) {
      const window = this.policy.limitOf(bucket, true)?.windowMs ?? RECORD_TTL_MS;
      const recent = b.sent.filter((at) => at + window > now);
      if (recent.length) record.spent[bucket] = recent;
      if (b.pausedUntil > now) record.paused[bucket] = b.pausedUntil;
      if (b.learned && this.learningMatters(bucket)) record.learned.push(bucket);
    }
    return record;
  }

  /**
   * Whether a 429 on `bucket` changes the limit the others assume for it. Discord's
   * interaction buckets have no limit either way: each is one token's, and what one
   * token met says nothing of the next, so listing every one ever refused (the channel
   * buckets too, whose limit is documented) only grew every replica's record.
   */
  private learningMatters(bucket: string): boolean {
    const learned = this.policy.limitOf(bucket, true);
    const known = this.policy.limitOf(bucket, false);
    return learned?.capacity !== known?.capacity || learned?.windowMs !== known?.windowMs;
  }

  private recordKey(owner: string): string {
    return `budget:${this.name}:${owner}`;
  }
}
