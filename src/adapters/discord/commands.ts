import {
  type AutocompleteInteraction,
  ChannelType,
  type ChatInputCommandInteraction,
  type Client,
  type Interaction,
  MessageFlags,
  type RESTPostAPIChatInputApplicationCommandsJSONBody,
  SlashCommandBuilder,
} from "discord.js";
import type { ThreadKey } from "../../core/thread.js";
import { log } from "../../log.js";
import type { CommandName } from "../../runtime/contract.js";
import { splitMessage } from "../../runtime/split.js";
import { type DiscordContext, dmKey, guildKey, provisionalName } from "./context.js";
import { channelPlace, interactionPlace } from "./places.js";
import { DISCORD_MESSAGE_LIMIT, DiscordReply, type Place } from "./reply.js";

export const COMMAND_FAILED = "That did not work: something went wrong on my side. Please try again.";

const SIMPLE: { name: CommandName; description: string }[] = [
  { name: "new", description: "Start a fresh conversation in this thread or DM" },
  { name: "tools", description: "List the tool servers and their status" },
  { name: "compact", description: "Fold the older part of this conversation into a summary now" },
  { name: "title", description: "Make a new title for this thread" },
  { name: "help", description: "What I can do and how to ask" },
];

export function commandDefinitions(): RESTPostAPIChatInputApplicationCommandsJSONBody[] {
  const ask = new SlashCommandBuilder()
    .setName("ask")
    .setDescription("Ask Switchboard; the answer comes in a new thread")
    .addStringOption((o) => o.setName("question").setDescription("Your question").setRequired(true));
  const model = new SlashCommandBuilder()
    .setName("model")
    .setDescription("Show this thread's model, or switch to another allowed one")
    .addStringOption((o) => o.setName("name").setDescription("Model id").setAutocomplete(true));
  const simple = SIMPLE.map((c) => new SlashCommandBuilder().setName(c.name).setDescription(c.description));
  return [ask, model, ...simple].map((b) => b.toJSON());
}

/** Registers the commands for one guild (updates show at once) or globally (may take a while to appear). */
export async function registerCommands(client: Client, guildId?: string): Promise<void> {
  if (!client.application) throw new Error("The client is not ready: no application");
  const defs = commandDefinitions();
  await (guildId ? client.application.commands.set(defs, guildId) : client.application.commands.set(defs));
  log.info({ scope: guildId ? `guild ${guildId}` : "global" }, "Discord slash commands registered");
}

function keyFor(interaction: Interaction): ThreadKey {
  const channelId = interaction.channelId ?? "";
  return interaction.guildId ? guildKey(interaction.guildId, channelId) : dmKey(channelId);
}

function userOf(interaction: Interaction): { id: string; name: string } {
  const member = interaction.member;
  const name = member && "displayName" in member ? member.displayName : interaction.user.displayName;
  return { id: interaction.user.id, name };
}

export async function onInteraction(ctx: DiscordContext, interaction: Interaction): Promise<void> {
  if (interaction.isAutocomplete()) return autocomplete(ctx, interaction);
  if (!interaction.isChatInputCommand()) return;
  // Interactions can reach two sessions during a deploy; the second would fail to acknowledge.
  if (!(await ctx.deps.runner.firstSight(`discord:i:${interaction.id}`))) return;
  if (interaction.commandName === "ask") return ask(ctx, interaction);
  await interaction.deferReply({ flags: MessageFlags.Ephemeral });
  const name = interaction.commandName as CommandName;
  const arg = interaction.options.getString("name") ?? undefined;
  let text: string;
  try {
    text = await ctx.deps.runner.command({
      name,
      key: keyFor(interaction),
      platform: "discord",
      user: userOf(interaction),
      arg,
    });
  } catch (err) {
    log.warn({ err, command: name }, "slash command failed");
    // The deferred reply would otherwise say "thinking…" forever.
    await interaction
      .editReply({ content: COMMAND_FAILED })
      .catch((e: unknown) => log.warn({ err: e }, "command failure not shown"));
    return;
  }
  const [first = "", ...rest] = splitMessage(text, DISCORD_MESSAGE_LIMIT);
  await interaction.editReply({ content: first });
  for (const part of rest) await interaction.followUp({ content: part, flags: MessageFlags.Ephemeral });
  if (name === "title") await renameOnRequest(ctx, interaction, text);
}

async function autocomplete(ctx: DiscordContext, interaction: AutocompleteInteraction): Promise<void> {
  if (interaction.commandName !== "model") return;
  const typed = String(interaction.options.getFocused()).toLowerCase();
  const choices = ctx.deps
    .models()
    .filter((m) => m.toLowerCase().includes(typed))
    .slice(0, 25)
    .map((m) => ({ name: m, value: m }));
  await interaction.respond(choices);
}

/** `/title` is an explicit request, so it may rename a thread the bot opened even after the automatic rename. */
async function renameOnRequest(
  ctx: DiscordContext,
  interaction: ChatInputCommandInteraction,
  text: string,
): Promise<void> {
  const prefix = "New title: ";
  const channel = interaction.channel;
  if (!text.startsWith(prefix) || !channel?.isThread() || channel.ownerId !== ctx.botId) return;
  await channel
    .setName(text.slice(prefix.length, prefix.length + 100))
    .catch((err: unknown) => log.warn({ err }, "thread not renamed"));
}

/** `/ask`: acknowledged at once (Discord allows 3 s), then answered in a new thread where the channel allows one. */
async function ask(ctx: DiscordContext, interaction: ChatInputCommandInteraction): Promise<void> {
  await interaction.deferReply();
  const question = interaction.options.getString("question", true);
  const user = userOf(interaction);
  let key = keyFor(interaction);
  let place: Place = interactionPlace(interaction);
  let replyChannel = interaction.channelId ?? "";
  const channel = interaction.channel;
  if (
    interaction.inGuild() &&
    (channel?.type === ChannelType.GuildText || channel?.type === ChannelType.GuildAnnouncement)
  ) {
    try {
      const shown = `**${user.name}** asked: ${question}`;
      const opener = await interaction.editReply({
        content:
          shown.length > DISCORD_MESSAGE_LIMIT ? `${shown.slice(0, DISCORD_MESSAGE_LIMIT - 1)}…` : shown,
        allowedMentions: { parse: [] },
      });
      const thread = await opener.startThread({ name: provisionalName(question) });
      key = guildKey(interaction.guildId, thread.id);
      replyChannel = thread.id;
      place = channelPlace(thread, {
        rename: ctx.renamer(thread),
        notice: async (text) => {
          await interaction.followUp({ content: text, flags: MessageFlags.Ephemeral });
        },
      });
    } catch (err) {
      log.warn({ err }, "could not open a thread for /ask; answering in place");
    }
  }
  await ctx.deps.runner.handle({
    id: `discord:ask:${interaction.id}`,
    key,
    platform: "discord",
    channel: interaction.channelId ?? "",
    user,
    text: question,
    attachments: [],
    reply: new DiscordReply(place, ctx.replyOptions(replyChannel)),
  });
}
