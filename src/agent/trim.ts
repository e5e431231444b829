import type { ChatMessage } from "../core/messages.js";

export function headAndTail(text: string, keep: { over: number; head: number; tail: number }): string {
  if (text.length <= keep.over) return text;
  const dropped = text.length - keep.head - keep.tail;
  return `${text.slice(0, keep.head)}\n[… ${dropped} characters left out …]\n${text.slice(text.length - keep.tail)}`;
}

/** Tool results shorter than this are left whole: halving them saves too little. */
const MIN_TRIMMABLE = 2_000;

/** Messages whose text may be halved to fit a prompt. */
type Trimmable = "tool" | "user" | "assistant";

/**
 * Halves the largest tool result in `messages` from `from` on (its head and tail kept)
 * until `fits()` says the messages fit, or none is long enough to halve. Replaces the
 * messages it trims with trimmed copies; returns how many times it halved one.
 */
export function trimToolResults(messages: ChatMessage[], from: number, fits: () => boolean): number {
  return trimLargest(messages, from, fits, ["tool"]);
}

/** As `trimToolResults`, the largest text of any of `roles` first (a pasted file, a long answer). */
export function trimLargest(
  messages: ChatMessage[],
  from: number,
  fits: () => boolean,
  roles: readonly Trimmable[],
): number {
  let trimmed = 0;
  while (!fits()) {
    const index = largest(messages, from, roles);
    if (index < 0) break;
    const message = messages[index] as ChatMessage;
    const keep = Math.floor(message.content.length / 4);
    messages[index] = {
      ...message,
      content: headAndTail(message.content, { over: 0, head: keep, tail: keep }),
    } as ChatMessage;
    trimmed++;
  }
  return trimmed;
}

function largest(messages: ChatMessage[], from: number, roles: readonly Trimmable[]): number {
  let best = -1;
  let size = MIN_TRIMMABLE;
  for (let i = from; i < messages.length; i++) {
    const m = messages[i];
    if (m && (roles as readonly string[]).includes(m.role) && m.content.length > size) {
      best = i;
      size = m.content.length;
    }
  }
  return best;
}
