import { DiscordAPIError, RESTJSONErrorCodes, type User } from "discord.js";
import { log } from "../../log.js";

/**
 * Discord's answers to a direct message it will not deliver: the person takes none from
 * the server's members, blocked the bot or is a bot (50007), or shares no server with it (50278).
 */
const UNDELIVERABLE = new Set<number | string>([
  RESTJSONErrorCodes.CannotSendMessagesToThisUser,
  RESTJSONErrorCodes.CannotSendMessagesToThisUserDueToHavingNoMutualGuilds,
]);

/**
 * Sends `content` to `user` by direct message, pinging nobody; true once it is sent. One
 * Discord will not deliver is dropped with a warning in the log (false) and said nowhere
 * else: what goes by DM is meant for that person alone. Any other failure (an outage) rejects.
 */
export async function sendDirectly(user: User, content: string): Promise<boolean> {
  try {
    await user.send({ content, allowedMentions: { parse: [] } });
    return true;
  } catch (err) {
    if (!(err instanceof DiscordAPIError && UNDELIVERABLE.has(err.code))) throw err;
    log.warn({ err, user: user.id }, "Discord would not deliver a direct message to this person; not sent");
    return false;
  }
}
