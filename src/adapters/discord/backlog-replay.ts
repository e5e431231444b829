import type { Client, WebSocketShard } from "discord.js";
import { log } from "../../log.js";
import { type MessagePacket, readBacklog } from "./gateway-backlog.js";
import type { GatewaySessions } from "./gateway-sessions.js";

/** The part of discord.js's gateway manager that takes a dispatch as if its shard had received it. */
interface PacketHandling {
  handlePacket(packet: MessagePacket, shard: WebSocketShard | undefined): boolean;
}

/**
 * Answers the messages that stopped processes' gateway sessions received and never stored:
 * each orphan's backlog goes through discord.js's own handling of a dispatch, so that a
 * replayed message is a `messageCreate` like a live one, and one the live session brought
 * already (discord.js keeps the message) is passed over. `began`: a handler took the
 * message; any other is settled at once. Once the process no longer `accepting`s work, the
 * rest stays pending, for the session's next process.
 */
export async function replayOrphans(
  client: Client,
  sessions: GatewaySessions,
  token: string,
  taken: { began: (messageId: string) => boolean; accepting: () => boolean },
): Promise<void> {
  for (const session of await sessions.orphans()) {
    const backlog = await readBacklog(session, token);
    const where = { session: session.sessionId.slice(0, 8), shard: session.shardId };
    if (!backlog.complete) {
      log.warn(
        { ...where, replayed: backlog.messages.length },
        "Discord did not replay the whole gateway session of a stopped process; messages it received and had not stored may go unanswered",
      );
    }
    if (backlog.messages.length === 0) {
      await sessions.drop(session.sessionId);
      continue;
    }
    sessions.adopt(
      session.sessionId,
      backlog.messages.map((m) => ({ id: m.d.id, s: m.s })),
      backlog.last,
    );
    log.info(
      { ...where, replayed: backlog.messages.length },
      "reading the messages a stopped process received from Discord",
    );
    const shard = client.ws.shards.get(session.shardId) ?? client.ws.shards.first();
    const manager = client.ws as unknown as PacketHandling;
    for (const packet of backlog.messages) {
      const { channel_id: channel, guild_id: guild } = packet.d;
      // A thread opened while no process was connected is not in the cache: discord.js would drop its message.
      if (guild && !client.channels.cache.has(channel))
        await client.channels.fetch(channel).catch(() => null);
      if (!taken.accepting()) return;
      manager.handlePacket(packet, shard);
      if (!taken.began(packet.d.id)) sessions.settled(packet.d.id);
    }
  }
}
