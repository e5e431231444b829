import {
  type MessageComponentInteraction,
  MessageFlags,
  type ModalData,
  type ModalSubmitInteraction,
} from "discord.js";
import { log } from "../../log.js";
import type { Interaction } from "../../runtime/contract.js";
import { parseInteractionId } from "../../runtime/interaction-ids.js";
import { type DiscordContext, provenanceOf } from "./context.js";

type ActionInteraction = MessageComponentInteraction | ModalSubmitInteraction;

/**
 * Buttons, select menus and modal submissions whose custom id is ours (`sb:{ref}`), handed
 * to the runner. Each is acknowledged first: Discord shows "This interaction failed" when no
 * callback comes within 3 s, and the runner may take longer.
 */
export async function onAction(ctx: DiscordContext, interaction: ActionInteraction): Promise<void> {
  const parsed = parseInteractionId(interaction.customId);
  if (!parsed) {
    log.debug({ customId: interaction.customId }, "component or modal that is not ours ignored");
    return;
  }
  // On a message, a deferred update acknowledges without changing it or showing anything.
  // A modal opened from a slash command has no message to update, so it gets an ephemeral
  // "thinking…" that the first answer replaces.
  const onMessage = interaction.isMessageComponent() || interaction.isFromMessage();
  try {
    if (onMessage) await interaction.deferUpdate();
    else await interaction.deferReply({ flags: MessageFlags.Ephemeral });
  } catch (err) {
    // Already acknowledged (a second gateway session got the same interaction during a
    // deploy) or too late: the other copy, or the person clicking again, takes it from here.
    log.info({ err, id: interaction.id }, "interaction not acknowledged; left to the other delivery");
    return;
  }
  let answered = false;
  const respond = async (text: string): Promise<void> => {
    const content = text.length > 2000 ? `${text.slice(0, 1999)}…` : text;
    if (!onMessage && !answered) {
      answered = true;
      await interaction.editReply({ content, allowedMentions: { parse: [] } });
      return;
    }
    await interaction.followUp({ content, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } });
  };
  const handed: Interaction = {
    id: `discord:i:${interaction.id}`,
    kind: interaction.isModalSubmit() ? "form" : "button",
    ref: parsed.ref,
    value: interaction.isModalSubmit() ? formValues(interaction) : componentValue(interaction, parsed.value),
    platform: "discord",
    user: userOf(interaction),
    ...(interaction.message ? { messageId: interaction.message.id } : {}),
    respond,
  };
  try {
    await ctx.deps.runner.interact(handed);
  } catch (err) {
    // The contract says interact never throws; if it does, the click is lost but logged.
    log.error({ err, ref: parsed.ref }, "interaction failed");
  }
}

/** A select menu's choices (joined by commas), else the value its custom id carries. */
function componentValue(interaction: MessageComponentInteraction, fromId: string | undefined): string {
  if (interaction.isAnySelectMenu()) return interaction.values.join(",");
  return fromId ?? "";
}

/** The modal's fields by custom id: text as typed, choices joined by commas. */
function formValues(interaction: ModalSubmitInteraction): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [id, field] of interaction.fields.fields) out[id] = fieldValue(field);
  return out;
}

function fieldValue(field: ModalData): string {
  if ("values" in field) return field.values.join(",");
  if ("value" in field) return field.value === null ? "" : String(field.value);
  return "";
}

function userOf(interaction: ActionInteraction): Interaction["user"] {
  const member = interaction.member;
  const name = member && "displayName" in member ? member.displayName : interaction.user.displayName;
  const { roles } = provenanceOf(interaction.guildId, member);
  return { id: interaction.user.id, name, bot: interaction.user.bot, ...(roles ? { roles } : {}) };
}
