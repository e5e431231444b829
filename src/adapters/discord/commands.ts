import { setTimeout as sleep } from "node:timers/promises";
import {
  type AutocompleteInteraction,
  ChannelType,
  type ChatInputCommandInteraction,
  type Client,
  type Interaction,
  type Message,
  MessageFlags,
  type ModalSubmitInteraction,
  type RESTPostAPIChatInputApplicationCommandsJSONBody,
  SlashCommandBuilder,
} from "discord.js";
import type { ThreadKey } from "../../core/thread.js";
import { log } from "../../log.js";
import { REFUSED_NOTE } from "../../runtime/access.js";
import {
  COMMANDS,
  type CommandSpec,
  findCommand,
  needsThread,
  type SuggestionSource,
} from "../../runtime/commands.js";
import { parseInteractionId } from "../../runtime/interaction-ids.js";
import { PROMPT_FORM, type PromptOutcome } from "../../runtime/prompts.js";
import { splitMessage } from "../../runtime/split.js";
import { onAction } from "./actions.js";
import {
  configuredChannel,
  type DiscordContext,
  dmKey,
  guildKey,
  provenanceOf,
  provisionalName,
} from "./context.js";
import { interactionPlace } from "./interaction-place.js";
import { discordModal, MODAL_FIELDS_MAX, modalValues } from "./modals.js";
import { openThread } from "./open-thread.js";
import { channelPlace } from "./places.js";
import { DISCORD_MESSAGE_LIMIT, DiscordReply, type Place } from "./reply.js";

export const COMMAND_FAILED = "That did not work: something went wrong on my side. Please try again.";

/** Said when Discord still shows a command this version no longer has (registrations lag behind). */
export const UNKNOWN_COMMAND = "I no longer know this command. Type / to see the ones I have now.";

/** Discord's command description: the catalog's help line, capitalised, at most 100 characters. */
function description(help: string): string {
  const text = help.charAt(0).toUpperCase() + help.slice(1);
  return text.length > 100 ? `${text.slice(0, 99)}…` : text;
}

/** One catalog command as a Discord slash command, its argument a string option. */
function slashCommand(spec: CommandSpec): SlashCommandBuilder {
  const builder = new SlashCommandBuilder().setName(spec.name).setDescription(description(spec.help));
  const arg = spec.argument;
  if (arg) {
    builder.addStringOption((o) =>
      o
        .setName(arg.name)
        .setDescription(arg.description)
        .setRequired(arg.required)
        .setAutocomplete(arg.suggest !== undefined),
    );
  }
  return builder;
}

/** `/ask` (a turn, only Discord has it as a command) and every command of the catalog. */
export function commandDefinitions(): RESTPostAPIChatInputApplicationCommandsJSONBody[] {
  const ask = new SlashCommandBuilder()
    .setName("ask")
    .setDescription("Ask Switchboard; the answer comes in a new thread")
    .addStringOption((o) => o.setName("question").setDescription("Your question").setRequired(true));
  return [ask, ...COMMANDS.map(slashCommand)].map((b) => b.toJSON());
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

export const NOT_IN_THREAD =
  "Use this command in the thread where I answered you: I open one for each question asked in a channel.";
export const UNKNOWN_THREAD =
  "I have not answered in this thread yet: mention me here first, then use this command again.";

/**
 * Why a thread command cannot act where it was typed, if it cannot: a conversation in a
 * guild is a thread the bot answered in (or a DM). Saving settings anywhere else would
 * change no answer, and would make the bot follow a thread nobody asked it into.
 */
async function notAConversation(ctx: DiscordContext, interaction: Interaction): Promise<string | undefined> {
  if (!interaction.guildId) return undefined;
  if (!interaction.channel?.isThread()) return NOT_IN_THREAD;
  return (await ctx.deps.runner.knows(keyFor(interaction))) ? undefined : UNKNOWN_THREAD;
}

function userOf(interaction: Interaction): { id: string; name: string } {
  const member = interaction.member;
  const name = member && "displayName" in member ? member.displayName : interaction.user.displayName;
  return { id: interaction.user.id, name };
}

export async function onInteraction(ctx: DiscordContext, interaction: Interaction): Promise<void> {
  if (interaction.isAutocomplete()) return autocomplete(ctx, interaction);
  if (interaction.isModalSubmit() && parseInteractionId(interaction.customId)?.value === PROMPT_FORM)
    return promptSubmitted(ctx, interaction);
  if (interaction.isMessageComponent() || interaction.isModalSubmit()) return onAction(ctx, interaction);
  if (!interaction.isChatInputCommand()) return;
  // Interactions can reach two sessions during a deploy; the second would fail to acknowledge.
  if (!(await ctx.deps.runner.firstSight(`discord:i:${interaction.id}`))) return;
  if (
    (interaction.commandName === "ask" || interaction.commandName === "prompt") &&
    !admitted(ctx, interaction)
  ) {
    // Told before anything is shown: no public "asked:" message, no thread, no "thinking…".
    await interaction
      .reply({ content: REFUSED_NOTE, flags: MessageFlags.Ephemeral })
      .catch((err: unknown) => log.warn({ err }, "refusal not shown"));
    return;
  }
  if (interaction.commandName === "ask") {
    const original = await deferReplying(interaction);
    return ask(ctx, interaction, interaction.options.getString("question", true), original);
  }
  if (interaction.commandName === "prompt" && ctx.deps.runner.prompt) return prompt(ctx, interaction);
  await interaction.deferReply({ flags: MessageFlags.Ephemeral });
  const spec = findCommand(interaction.commandName);
  if (!spec) {
    await interaction.editReply({ content: UNKNOWN_COMMAND });
    return;
  }
  const arg = spec.argument ? (interaction.options.getString(spec.argument.name) ?? undefined) : undefined;
  const elsewhere = needsThread(spec, arg) ? await notAConversation(ctx, interaction) : undefined;
  if (elsewhere) {
    await interaction.editReply({ content: elsewhere });
    return;
  }
  let text: string;
  try {
    text = await ctx.deps.runner.command({
      name: spec.name,
      key: keyFor(interaction),
      platform: "discord",
      user: userOf(interaction),
      arg,
      channel: (interaction.channel ? configuredChannel(interaction.channel) : interaction.channelId) ?? "",
      from: provenanceOf(interaction.guildId, interaction.member),
    });
  } catch (err) {
    log.warn({ err, command: spec.name }, "slash command failed");
    // The deferred reply would otherwise say "thinking…" forever.
    await interaction
      .editReply({ content: COMMAND_FAILED })
      .catch((e: unknown) => log.warn({ err: e }, "command failure not shown"));
    return;
  }
  const [first = "", ...rest] = splitMessage(text, DISCORD_MESSAGE_LIMIT);
  await interaction.editReply({ content: first });
  for (const part of rest) await interaction.followUp({ content: part, flags: MessageFlags.Ephemeral });
  if (spec.name === "title") await renameOnRequest(ctx, interaction, text);
}

function suggestions(ctx: DiscordContext, source: SuggestionSource): string[] {
  switch (source) {
    case "models":
      return ctx.deps.models();
    case "prompts":
      return ctx.deps.prompts?.() ?? [];
  }
}

/** Discord's autocomplete limits: 25 choices, each name and string value 1 to 100 characters. */
const CHOICES_MAX = 25;
const CHOICE_CHARS = 100;

/**
 * The choices for what was typed, each named by its value. One choice out of bounds makes
 * Discord refuse the whole list, and a value is what the option is filled with: cut to 100
 * characters it would name another model or prompt (or none), so a longer one is left out
 * (typed in full it still works). A short key mapped back later was the other way: it
 * would break once the list changed, or the answer reached another replica, and /prompt's
 * arguments are typed after the name in the same option.
 */
function autocompleteChoices(suggested: string[], typed: string): { name: string; value: string }[] {
  const wanted = typed.toLowerCase();
  return [...new Set(suggested)]
    .filter((m) => m.length > 0 && m.length <= CHOICE_CHARS && m.toLowerCase().includes(wanted))
    .slice(0, CHOICES_MAX)
    .map((m) => ({ name: m, value: m }));
}

async function autocomplete(ctx: DiscordContext, interaction: AutocompleteInteraction): Promise<void> {
  const source = findCommand(interaction.commandName)?.argument?.suggest;
  if (!source) return;
  const typed = String(interaction.options.getFocused());
  await interaction.respond(autocompleteChoices(suggestions(ctx, source), typed));
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

/**
 * `/prompt`: a server's prompt asked as if the person had written it, like `/ask`. The
 * reply is deferred first (the server answers prompts/get in its own time, Discord waits
 * 3 s); a prompt that cannot be run is told to the person alone.
 */
async function prompt(ctx: DiscordContext, interaction: ChatInputCommandInteraction): Promise<void> {
  const typed = interaction.options.getString("name", true);
  const pending = ctx.deps.runner.prompt!(typed, { forms: true, fieldsPerForm: MODAL_FIELDS_MAX });
  // A form for missing arguments is decided before the server is asked anything, so it
  // comes quickly; the modal must be the first response, within Discord's 3 s.
  const quick = await Promise.race([pending, sleep(FORM_DECISION_MS).then(() => undefined)]);
  if (quick && "form" in quick) {
    await interaction.showModal(discordModal(quick.form)).catch(async (err: unknown) => {
      log.warn({ err }, "could not open a prompt's form");
      // Unanswered, the command would end in Discord's "The application did not respond".
      const name = typed.trim().split(/\s+/)[0] ?? "";
      const args = quick.form.fields.map((f) => `${f.name}=…`).join(" ");
      await interaction
        .reply({
          content: `Discord would not open the form for this prompt's arguments. Type them after its name instead, like /prompt ${name} ${args}.`,
          flags: MessageFlags.Ephemeral,
        })
        .catch((e: unknown) => log.warn({ err: e }, "could not say a prompt's form did not open"));
    });
    return;
  }
  const original = await deferReplying(interaction);
  await promptAnswered(ctx, interaction, quick ?? (await pending), original);
}

/** A prompt's form, submitted: asked like `/prompt` with the typed arguments. */
async function promptSubmitted(ctx: DiscordContext, interaction: ModalSubmitInteraction): Promise<void> {
  if (!(await ctx.deps.runner.firstSight(`discord:i:${interaction.id}`))) return;
  const original = await deferReplying(interaction);
  const ref = parseInteractionId(interaction.customId)?.ref ?? "";
  const outcome = ctx.deps.runner.promptForm
    ? await ctx.deps.runner.promptForm(ref, modalValues(interaction.fields.fields))
    : { say: "Prompts cannot be run here." };
  await promptAnswered(ctx, interaction, outcome, original);
}

async function promptAnswered(
  ctx: DiscordContext,
  interaction: ChatInputCommandInteraction | ModalSubmitInteraction,
  outcome: PromptOutcome,
  original: string | undefined,
): Promise<void> {
  if ("ask" in outcome) return ask(ctx, interaction, outcome.ask, original);
  const say = "say" in outcome ? outcome.say : "That prompt needs arguments: give them as key=value.";
  await interaction.deleteReply().catch((err: unknown) => log.debug({ err }, "deferred reply not deleted"));
  await interaction.followUp({ content: say.slice(0, DISCORD_MESSAGE_LIMIT), flags: MessageFlags.Ephemeral });
}

/**
 * How long a prompt's form may take to be decided: it is decided before any server is
 * asked (in microtasks, today), and every millisecond waited here comes out of the 3 s
 * Discord gives the reply's deferral, with the gateway's and the event loop's delays.
 */
const FORM_DECISION_MS = 250;

/** Whether the access lists let this person ask here, as a mention is checked before its thread opens. */
function admitted(ctx: DiscordContext, interaction: ChatInputCommandInteraction): boolean {
  const channel = interaction.channel;
  const verdict = ctx.deps.runner.admit?.({
    platform: "discord",
    channel: (channel ? configuredChannel(channel) : interaction.channelId) ?? "",
    user: { id: interaction.user.id },
    from: provenanceOf(interaction.guildId, interaction.member),
  });
  return verdict === undefined || verdict === "yes";
}

/**
 * Defers the reply ("thinking…"), and returns the id Discord gives its message: past the
 * token's 15 minutes, that id is the only way to fill it (through the channel).
 */
async function deferReplying(
  interaction: ChatInputCommandInteraction | ModalSubmitInteraction,
): Promise<string | undefined> {
  const response = await interaction.deferReply({ withResponse: true });
  return response.interaction.responseMessageId ?? undefined;
}

/**
 * `/ask` (deferred by the caller, as Discord wants within 3 s, its reply's message
 * `original`), answered in a new thread where the channel allows one.
 */
async function ask(
  ctx: DiscordContext,
  interaction: ChatInputCommandInteraction | ModalSubmitInteraction,
  question: string,
  original: string | undefined,
): Promise<void> {
  const user = userOf(interaction);
  let key = keyFor(interaction);
  let place: Place = interactionPlace(interaction, { original });
  /** The reply shows the question, once Discord took it: the answer must not overwrite it. */
  let echo: Message | undefined;
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
      echo = opener;
      // Through the bot's scheduler, as a mention's thread: one Discord would hold back for
      // minutes is not waited for, and the answer comes here instead.
      const thread = await openThread(
        ctx.client,
        ctx.scheduler,
        ctx.lateThreads,
        opener as Message<true>,
        provisionalName(question),
      );
      key = guildKey(interaction.guildId, thread.id);
      // A notice is for the asker alone, through the interaction: an ephemeral follow-up
      // while its token lives, a DM after it; never the thread. So is why the thread takes
      // no answer (Create Public Threads allowed, Send Messages in Threads denied): else
      // the asker sees the question and an empty thread. Not once an hour, as for
      // mentions: each /ask is asked anew, and its token answers only its asker.
      const asker = interactionPlace(interaction, { original: opener.id, echo: true });
      const tellAsker = (text: string) => asker.notice(text);
      place = {
        ...channelPlace(thread, { rename: ctx.renamer(thread), notice: tellAsker }),
        elsewhere: tellAsker,
      };
    } catch (err) {
      // A conversation of its own, as a mention without a thread: keyed by the channel,
      // every person's /ask there would build on the others' and wait in one line. A reply
      // to its answer, or to the question shown, goes on with it, found by their messages.
      const own = guildKey(interaction.guildId, interaction.id);
      key = own;
      if (echo) await ctx.answers.remember(echo.id, own);
      // Under the question shown, if it was: the answer's messages are new ones.
      place = interactionPlace(interaction, {
        original: echo?.id ?? original,
        echo: echo !== undefined,
        posted: (id) => ctx.answers.remember(id, own),
      });
      log.warn({ err }, "could not open a thread for /ask; answering in place");
    }
  }
  await ctx.deps.runner.handle({
    id: `discord:ask:${interaction.id}`,
    key,
    platform: "discord",
    channel: (channel ? configuredChannel(channel) : interaction.channelId) ?? "",
    user,
    from: provenanceOf(interaction.guildId, interaction.member),
    text: question,
    attachments: [],
    // The deferred reply ("thinking…") or the question's own message shows first.
    reply: new DiscordReply(place, ctx.replyOptions(true)),
  });
}
