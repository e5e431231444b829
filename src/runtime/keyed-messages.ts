import { log } from "../log.js";
import type { MessageOps, WriteInfo } from "./message-ops.js";

/** One platform message of a reply, as the writer keeps it. */
export interface Slot {
  id: string | null;
  /** The text the message should show now; "" means "remove it". */
  want: string;
  /** The text last written successfully. */
  sent: string | null;
  /** Where `want`'s source ends in the answer, and whether `want` is that source alone (no status line). */
  wantEnd?: number;
  wantClean?: boolean;
  /** The same for `sent`: a continuation may start where a clean `sent` ends. */
  sentEnd?: number;
  sentClean?: boolean;
  /** A retaken message not written yet: it still shows what the dead process left in it. */
  stale?: boolean;
  /** Not known to be posted, but it may be (a post that failed, a retaken reply): its key is looked up first. */
  unsure?: "failed" | "retaken";
  /**
   * Its message was deleted, and it is posted again without its key: a platform that
   * dedupes posts by key (Discord's nonce) could answer with the deleted message.
   */
  reposted?: boolean;
}

/**
 * The idempotency keys of a reply's messages (see write-keys.ts), as the writer uses them:
 * a post that may have landed is looked up by its key before it is sent again, and a
 * retaken reply finds the messages its dead process posted without recording them.
 */
export class KeyedMessages {
  constructor(
    private readonly ops: MessageOps,
    private readonly keys: ((index: number) => string) | undefined,
    /** Messages of the reply before the writer's first slot (a resumed reply's earlier ones). */
    private readonly offset: number,
  ) {}

  /** The key of the slot at `index`: its place in the whole reply. */
  keyOf(index: number): string | undefined {
    return this.keys?.(this.offset + index);
  }

  /** A failed post can be sent again without risking a second copy. */
  canRetryPost(index: number): boolean {
    return this.keyOf(index) !== undefined && (this.ops.find !== undefined || this.ops.postsDeduped === true);
  }

  /**
   * Posts the slot's `text` under its key (none once reposted). True when, instead, a
   * message it may have posted already was found and taken (see `adopt`).
   */
  async post(
    slot: Slot,
    index: number,
    text: string,
    write: WriteInfo,
    report: () => Promise<void>,
  ): Promise<boolean> {
    if (await this.adopt(slot, index, report)) return true;
    const key = slot.reposted ? undefined : this.keyOf(index);
    slot.id = await this.ops.post(text, key ? { ...write, key } : write);
    delete slot.unsure;
    return false;
  }

  /**
   * A message that may be posted already is looked up by its key; when it is there, the
   * slot takes it (to be edited to its text) instead of posting it again.
   */
  async adopt(slot: Slot, index: number, report: () => Promise<void>): Promise<boolean> {
    const key = this.keyOf(index);
    if (!slot.unsure || !key || !this.ops.find) return false;
    const found = await this.ops.find(key, slot.unsure);
    delete slot.unsure;
    if (!found) return false;
    log.info({ key }, "found a message of this reply already posted; writing on in it");
    slot.id = found;
    slot.sent = null;
    slot.stale = true;
    await report();
    return true;
  }

  /**
   * A retaken answer that needs fewer messages than the dead process had posted: the
   * ones it posted without recording them are found by their keys and added as stale
   * slots, to be removed. True when any was found.
   */
  async claimLeftovers(slots: Slot[]): Promise<boolean> {
    const { find } = this.ops;
    if (!find || !this.keys) return false;
    let found = false;
    try {
      for (let i = slots.length; ; i++) {
        const key = this.keyOf(i);
        const id = key === undefined ? null : await find(key, "retaken");
        if (id === null) return found;
        slots[i] = { id, want: "", sent: null, stale: true };
        found = true;
      }
    } catch (err) {
      log.warn({ err }, "messages of a retaken reply not looked up; any left over stay");
      return found;
    }
  }
}

/** What a placeholder becomes when the answer has no text and `MessageOps.remove` is missing. */
export const NO_TEXT = "Done.";

/** The write a slot needs next. */
export function writeKind(slot: Slot | undefined): "post" | "edit" | "remove" {
  if (!slot || slot.id === null) return "post";
  return slot.want === "" ? "remove" : "edit";
}

/**
 * Retaken messages the answer ended without (it needs fewer than the cut-off one had, or
 * no text at all) still show the dead process's text: removed, or else "Done.".
 */
export function clearStale(slots: Slot[], canRemove: boolean): void {
  for (const slot of slots) {
    if (!slot.stale || slot.id === null || slot.want !== "") continue;
    if (!canRemove) slot.want = NO_TEXT;
    slot.sent = null;
  }
}

/**
 * The slot's message was deleted while the answer was written: it is posted again with
 * all of its text, without its key (Discord could answer a keyed post with the deleted message).
 */
export function repost(slot: Slot): void {
  log.info(
    { messageId: slot.id },
    "a message of the answer was deleted; its text goes out again in a new one",
  );
  slot.id = null;
  slot.sent = "";
  slot.reposted = true;
  delete slot.unsure;
}

/** The slot at `index`, made empty when there is none yet (a retaken reply's may have been posted: looked up first). */
export function slotAt(slots: Slot[], index: number, retaking: boolean): Slot {
  let slot = slots[index];
  if (!slot) {
    slot = { id: null, want: "", sent: null, ...(retaking ? { unsure: "retaken" as const } : {}) };
    slots[index] = slot;
  }
  return slot;
}

/** The first slot whose message does not show its latest text yet (-1: all do). */
export function firstDirty(slots: readonly Slot[]): number {
  return slots.findIndex((s) => s.want !== s.sent);
}
