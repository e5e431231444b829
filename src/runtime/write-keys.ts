import { createHash } from "node:crypto";

/** Discord's nonce takes at most 25 characters; Slack's message metadata takes any. */
const KEY_CHARS = 25;

/**
 * The idempotency keys of one reply's messages: the n-th message's key is derived from
 * the turn's id (in its record before anything is written) and the reply's number in the
 * turn (a turn that waited for approvals goes on in a new reply). The keys are never
 * stored: a retried post, or a process taking the turn over, derives the same key and
 * finds the message it names instead of posting it again.
 */
export function postKeys(turn: string, reply = 0): (index: number) => string {
  return (index) =>
    `sb${createHash("sha256")
      .update(`${turn}:${reply}:${index}`)
      .digest("base64url")
      .slice(0, KEY_CHARS - 2)}`;
}
