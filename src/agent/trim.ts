import type { ChatMessage, ToolMessage } from "../core/messages.js";

export function headAndTail(text: string, keep: { over: number; head: number; tail: number }): string {
  if (text.length <= keep.over) return text;
  const dropped = text.length - keep.head - keep.tail;
  return `${text.slice(0, keep.head)}\n[… ${dropped} characters left out …]\n${text.slice(text.length - keep.tail)}`;
}

/** Tool results shorter than this are left whole: halving them saves too little. */
const MIN_TRIMMABLE = 2_000;

/**
 * Halves the largest tool result in `messages` from `from` on (its head and tail kept)
 * until `fits()` says the messages fit, or none is long enough to halve. Replaces the
 * messages it trims with trimmed copies; returns how many times it halved one.
 */
export function trimToolResults(messages: ChatMessage[], from: number, fits: () => boolean): number {
  let trimmed = 0;
  while (!fits()) {
    const index = largestToolResult(messages, from);
    if (index < 0) break;
    const message = messages[index] as ToolMessage;
    const keep = Math.floor(message.content.length / 4);
    messages[index] = {
      ...message,
      content: headAndTail(message.content, { over: 0, head: keep, tail: keep }),
    };
    trimmed++;
  }
  return trimmed;
}

function largestToolResult(messages: ChatMessage[], from: number): number {
  let best = -1;
  let size = MIN_TRIMMABLE;
  for (let i = from; i < messages.length; i++) {
    const m = messages[i];
    if (m?.role === "tool" && m.content.length > size) {
      best = i;
      size = m.content.length;
    }
  }
  return best;
}
