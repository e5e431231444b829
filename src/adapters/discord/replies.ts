import { type Message, MessageReferenceType, MessageType } from "discord.js";
import type { ThreadKey } from "../../core/thread.js";
import { log } from "../../log.js";
import { NOTHING_ASKED } from "../../runtime/intake.js";
import type { StateStore } from "../../store/state.js";

/** Discord's mention can also be a reply to the message it is about. */
export const NOTHING_ASKED_ON_DISCORD = `${NOTHING_ASKED} To ask about a message, reply to it and mention me.`;

/** The id of the message `message` replies to (a forward's original is not one). */
function repliedId(message: Message): string | undefined {
  const ref = message.reference;
  if (message.type !== MessageType.Reply || ref?.type !== MessageReferenceType.Default) return undefined;
  return ref.messageId;
}

/** The message `message` replies to; undefined when there is none or it is gone. */
export async function repliedTo(message: Message): Promise<Message | undefined> {
  if (!repliedId(message)) return undefined;
  // discord.js has it from the event (Discord sends it along); a fetch only when it does not.
  return (await message.fetchReference().catch(() => null)) ?? undefined;
}

/** How long a reply to an answer in a channel goes on with its conversation. */
const CONTINUABLE_MS = 90 * 24 * 60 * 60 * 1000;
const answerKey = (messageId: string) => `discord:answer:${messageId}`;

/**
 * The conversations of the bot's answers written in a channel, where Discord opened no
 * thread: a thread's messages are keyed by the thread, but these only by the question
 * that started them, so each of their messages is noted in the store (for every replica,
 * and after a restart) as the way back to its conversation.
 */
export class ChannelAnswers {
  constructor(private readonly state: StateStore) {}

  async remember(messageId: string, key: ThreadKey): Promise<void> {
    await this.state
      .set(answerKey(messageId), key, CONTINUABLE_MS)
      .catch((err: unknown) =>
        log.warn(
          { err, messageId },
          "a channel answer's conversation not noted; a reply to it starts a new one",
        ),
      );
  }

  /** The conversation `message` goes on with, when it replies to one of the bot's answers in a channel. */
  async continued(message: Message, botId: string): Promise<ThreadKey | undefined> {
    const id = repliedId(message);
    if (!id) return undefined;
    // Discord names the author replied to when it sends the message along: someone else's needs no lookup.
    const to = message.mentions.repliedUser;
    if (to && to.id !== botId) return undefined;
    return this.state.get<ThreadKey>(answerKey(id)).catch((err: unknown) => {
      log.warn({ err }, "could not look up the conversation of the answer replied to");
      return undefined;
    });
  }
}
