import type { KeyedMessages, Slot } from "./keyed-messages.js";
import type { MessageOps, WriteInfo } from "./message-ops.js";

/**
 * One write of a slot's latest text (`want`, kept as `sent` once written): posted (under
 * its key, see KeyedMessages) when the slot has no message yet, removed for "", else
 * edited. "adopted": a message the slot may have posted was found instead, to be written
 * next; "changed": a message was posted or removed.
 */
export async function writeSlot(
  ops: MessageOps,
  keyed: KeyedMessages,
  slots: readonly Slot[],
  slot: Slot,
  write: WriteInfo,
  report: () => Promise<void>,
): Promise<"adopted" | "changed" | "written"> {
  const { want: text, wantEnd, wantClean } = slot;
  const how = await send(ops, keyed, slots, slot, text, write, report);
  if (how === "adopted") return how;
  slot.sent = text;
  slot.stale = false;
  slot.sentEnd = wantEnd;
  slot.sentClean = wantClean;
  return how;
}

async function send(
  ops: MessageOps,
  keyed: KeyedMessages,
  slots: readonly Slot[],
  slot: Slot,
  text: string,
  write: WriteInfo,
  report: () => Promise<void>,
): Promise<"adopted" | "changed" | "written"> {
  if (slot.id === null) {
    // Only whitespace (the answer's last line break, split off at a message's limit):
    // nothing to see, and both platforms refuse such a message ("Cannot send an empty
    // message", no_text). It is posted once text follows it.
    if (text.trim() === "") return "written";
    return (await keyed.post(slot, slots.indexOf(slot), text, write, report)) ? "adopted" : "changed";
  }
  if (text === "") {
    await ops.remove?.(slot.id);
    slot.id = null;
    return "changed";
  }
  await ops.edit(slot.id, text, write);
  return "written";
}
