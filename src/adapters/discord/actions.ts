import {
  type ButtonInteraction,
  type MessageComponentInteraction,
  MessageFlags,
  type ModalSubmitInteraction,
} from "discord.js";
import { log } from "../../log.js";
import { type Interaction, type InteractionReply, OPEN_FORM } from "../../runtime/contract.js";
import { parseInteractionId } from "../../runtime/interaction-ids.js";
import { type DiscordContext, provenanceOf } from "./context.js";
import { discordModal, modalValues } from "./modals.js";

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
  if (interaction.isButton() && parsed.value === OPEN_FORM) {
    await openForm(ctx, interaction, parsed.ref);
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
  const form = interaction.isModalSubmit();
  const handed: Interaction = {
    id: `discord:i:${interaction.id}`,
    kind: form ? "form" : "button",
    ref: parsed.ref,
    value: form ? modalValues(interaction.fields.fields) : componentValue(interaction, parsed.value),
    ...(form && parsed.value ? { via: parsed.value } : {}),
    platform: "discord",
    user: userOf(interaction),
    ...(interaction.message ? { messageId: interaction.message.id } : {}),
    respond,
  };
  const outcome = await hand(ctx, handed);
  // A modal cannot stay open with its errors on Discord: they are told, and what was typed is kept for the next try.
  if (outcome && "errors" in outcome) {
    await respond(`${errorsText(outcome.errors)}
Press Fill in again to fix them; what you typed is kept.`).catch((err: unknown) =>
      log.warn({ err }, "could not tell a form's errors"),
    );
  }
}

export const FORM_NOT_OPENED =
  "Discord would not open this form. Press Fill in again in a moment, or use Decline or Cancel.";

/**
 * A click on a form's Fill in button: its first (and only) response must be the modal,
 * within Discord's 3 s, so nothing is deferred; a refusal is the ephemeral reply instead.
 */
async function openForm(ctx: DiscordContext, interaction: ButtonInteraction, ref: string): Promise<void> {
  let replied = false;
  const respond = async (text: string): Promise<void> => {
    const content = text.length > 2000 ? `${text.slice(0, 1999)}…` : text;
    const message = { content, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } } as const;
    if (replied) await interaction.followUp(message);
    else {
      replied = true;
      await interaction.reply(message);
    }
  };
  const outcome = await hand(ctx, {
    id: `discord:i:${interaction.id}`,
    kind: "button",
    ref,
    value: OPEN_FORM,
    platform: "discord",
    user: userOf(interaction),
    messageId: interaction.message.id,
    respond,
  });
  if (!outcome || !("open" in outcome) || replied) return;
  await interaction.showModal(discordModal(outcome.open)).catch(async (err: unknown) => {
    log.warn({ err, ref }, "could not open a form");
    // Unanswered, the click would end in Discord's "This interaction failed".
    await respond(FORM_NOT_OPENED).catch((e: unknown) =>
      log.warn({ err: e, ref }, "could not say a form did not open"),
    );
  });
}

async function hand(ctx: DiscordContext, interaction: Interaction): Promise<InteractionReply | undefined> {
  try {
    return (await ctx.deps.runner.interact(interaction)) ?? undefined;
  } catch (err) {
    // The contract says interact never throws; if it does, the click is lost but logged.
    log.error({ err, ref: interaction.ref }, "interaction failed");
    return undefined;
  }
}

function errorsText(errors: Record<string, string>): string {
  return `Some answers need fixing:\n${Object.values(errors)
    .map((e) => `• ${e}`)
    .join("\n")}`;
}

/** A select menu's choices (joined by commas), else the value its custom id carries. */
function componentValue(interaction: MessageComponentInteraction, fromId: string | undefined): string {
  if (interaction.isAnySelectMenu()) return interaction.values.join(",");
  return fromId ?? "";
}

function userOf(interaction: ActionInteraction): Interaction["user"] {
  const member = interaction.member;
  const name = member && "displayName" in member ? member.displayName : interaction.user.displayName;
  const { roles } = provenanceOf(interaction.guildId, member);
  return { id: interaction.user.id, name, bot: interaction.user.bot, ...(roles ? { roles } : {}) };
}
