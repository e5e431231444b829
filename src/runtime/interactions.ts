import { log } from "../log.js";
import type { Interaction } from "./contract.js";

export const EXPIRED_NOTE =
  "This has expired: the question it belonged to is no longer waiting for an answer.";

/**
 * Clicks and form submissions come back here, by the stored id their button or form
 * carries. Nothing waits for one yet, so every interaction is told that it has expired;
 * approvals and forms register what waits for them here.
 */
export async function handleInteraction(interaction: Interaction): Promise<void> {
  log.debug({ ref: interaction.ref, kind: interaction.kind, platform: interaction.platform }, "interaction");
  await interaction
    .respond(EXPIRED_NOTE)
    .catch((err: unknown) => log.warn({ err, ref: interaction.ref }, "could not answer an interaction"));
}
