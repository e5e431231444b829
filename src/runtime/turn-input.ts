import { storedFiles } from "../core/inbound.js";
import type { TurnInput } from "../store/turns.js";
import { askerTeam } from "./approvals/policy.js";
import type { Inbound } from "./contract.js";

/**
 * What a process taking the message over needs to answer it: in its turn's record, kept
 * while it waits, handed over at a stop. With its files: whoever answers reads them itself.
 */
export function inputOf(inbound: Inbound): TurnInput {
  const { text, user, channel, sentAt, mark } = inbound;
  const files = storedFiles(inbound.attachments);
  const team = askerTeam(inbound.platform, inbound.from);
  return {
    text,
    user,
    channel,
    ...(team ? { team } : {}),
    ...(sentAt === undefined ? {} : { sentAt }),
    ...(mark ? { mark } : {}),
    ...(files.length ? { files } : {}),
  };
}
