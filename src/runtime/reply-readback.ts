import type { Slot } from "./keyed-messages.js";
import type { StreamWriterOptions } from "./stream-options.js";

/** What a resumed reply starts from: its messages as slots, and the text they already hold. */
export interface ReadBack {
  slots: Slot[];
  /** The text the reply's messages already show (a retake: what the dead process had shown). */
  prefix: string;
  /** A retaken reply: its messages are written over, and looked up by key before a post. */
  retaking: boolean;
  /** The record must be written again: its last message is gone, or one it did not name was found. */
  rerecord: boolean;
}

/**
 * Reads back the messages a resumed reply goes on in. A retake (a takeover) lays its
 * messages out again from the text it keeps, each shown as "" so that nothing is rewritten
 * before there is text to write; a reply resumed after approvals goes on in its last message.
 */
export async function readBack(resume: StreamWriterOptions["resume"]): Promise<ReadBack> {
  const none = { slots: [], prefix: "", retaking: false, rerecord: false };
  if (!resume) return none;
  const found = resume.retake === undefined ? null : ((await resume.unrecorded?.()) ?? null);
  const messages = found === null ? resume.messages : [...resume.messages, found];
  const id = messages.at(-1);
  const shown = id === undefined ? null : await resume.shown(id);
  if (resume.retake !== undefined) {
    const last = messages.length - 1;
    const slots = messages.map((mid, i): Slot => {
      const gone = i === last && shown === null;
      return { id: gone ? null : mid, want: "", sent: "", stale: !gone };
    });
    return {
      slots,
      prefix: resume.retake,
      retaking: true,
      rerecord: (shown === null && messages.length > 0) || (found !== null && shown !== null),
    };
  }
  if (id === undefined || shown === null) return none;
  return { slots: [{ id, want: shown, sent: shown }], prefix: shown, retaking: false, rerecord: false };
}
