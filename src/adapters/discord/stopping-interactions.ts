import { setTimeout as sleep } from "node:timers/promises";
import { type Interaction, MessageFlags } from "discord.js";
import { log } from "../../log.js";
import type { TurnRunner } from "../../runtime/contract.js";

/** What a person is told who used a command or a button as the only process taking it stopped. */
export const RESTARTING = "Switchboard is restarting, so this was not done. Try again in a few seconds.";

/** The time a live replica on the same gateway session has to take the interaction first. */
const LIVE_REPLICA_FIRST_MS = 1_000;

/**
 * An interaction that reached a process as it stopped. Discord waits 3 s for its answer and
 * never sends it again, so rather than "The application did not respond" the person is
 * told to try again, unless a replica on the same gateway session took it first (a command's
 * claim, a button's acknowledgement: this reply then fails, and nothing shows twice). A form
 * submitted gets no answer: Discord keeps the form open, with what was typed, for a retry.
 */
export async function tellRestarting(
  interaction: Interaction,
  runner: Pick<TurnRunner, "firstSight">,
): Promise<void> {
  if (!interaction.isRepliable() || interaction.isModalSubmit()) return;
  await sleep(LIVE_REPLICA_FIRST_MS);
  // The claim commands are taken by (commands.ts): a replica that took it answers the command.
  if (interaction.isChatInputCommand() && !(await runner.firstSight(`discord:i:${interaction.id}`))) return;
  // Refused when a replica acknowledged it first, or once Discord's 3 s are over: nothing to tell then.
  await interaction
    .reply({ content: RESTARTING, flags: MessageFlags.Ephemeral })
    .catch((err: unknown) => log.debug({ err, id: interaction.id }, "a stopping process's note not shown"));
}
