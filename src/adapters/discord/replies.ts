import { type Message, MessageReferenceType, MessageType } from "discord.js";
import { NOTHING_ASKED } from "../../runtime/intake.js";

/** Discord's mention can also be a reply to the message it is about. */
export const NOTHING_ASKED_ON_DISCORD = `${NOTHING_ASKED} To ask about a message, reply to it and mention me.`;

/** The message `message` replies to (not a forward's original); undefined when there is none or it is gone. */
export async function repliedTo(message: Message): Promise<Message | undefined> {
  const ref = message.reference;
  if (message.type !== MessageType.Reply || ref?.type !== MessageReferenceType.Default || !ref.messageId)
    return undefined;
  // discord.js has it from the event (Discord sends it along); a fetch only when it does not.
  return (await message.fetchReference().catch(() => null)) ?? undefined;
}
