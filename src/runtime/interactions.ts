import { toUserFacing } from "../core/errors.js";
import { log } from "../log.js";
import type { ApprovalDesk } from "./approvals/desk.js";
import type { Interaction, InteractionReply } from "./contract.js";
import type { FeedbackDesk } from "./feedback.js";
import type { FormDesk } from "./forms/desk.js";
import { ENDED_NOTE, type RunningTurns } from "./stops.js";

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

export interface RouteDeps {
  firstSight(id: string): Promise<boolean>;
  running: RunningTurns;
  /** A Stop button of an answer another replica writes (see RemoteStops.request). */
  stopElsewhere?(
    ref: string,
    by: Interaction["user"],
    inGroups?: Interaction["inGroups"],
  ): Promise<string | undefined>;
  desk?: ApprovalDesk;
  feedback?: FeedbackDesk;
  forms?: FormDesk;
}

/**
 * Where a click goes: a Stop button to its running answer, a rating to the feedback desk,
 * an approval to the approvals desk, a form's button or submission to the forms desk, the rest to `handleInteraction`. Clicks from bots never count, and a click delivered twice
 * is handled once.
 */
export async function routeInteraction(
  interaction: Interaction,
  deps: RouteDeps,
): Promise<InteractionReply | undefined> {
  if (interaction.user.bot) return undefined;
  if (!(await deps.firstSight(interaction.id).catch(() => true))) return undefined;
  const stopping = deps.running.keyOf(interaction.ref);
  if (stopping !== undefined || interaction.value === "stop") {
    if (stopping === undefined) {
      const said = await deps
        .stopElsewhere?.(interaction.ref, interaction.user, interaction.inGroups)
        .catch((err: unknown) =>
          log.warn({ err, ref: interaction.ref }, "stop not passed to another replica"),
        );
      if (said !== "") await interaction.respond(said ?? ENDED_NOTE).catch(() => undefined);
      return undefined;
    }
    const said = await deps.running.stop(stopping, interaction.user, interaction.inGroups);
    if (said) await interaction.respond(said).catch(() => undefined);
    return undefined;
  }
  try {
    if (await deps.feedback?.interact(interaction)) return undefined;
    const approval = await deps.desk?.find(interaction.ref);
    if (approval) return void (await deps.desk?.interact(interaction, approval));
    const form = await deps.forms?.find(interaction.ref);
    if (form) return await deps.forms?.interact(interaction, form);
  } catch (err) {
    log.error({ err, ref: interaction.ref }, "could not handle a click on an approval, a form or a rating");
    await interaction.respond(toUserFacing(err).message).catch(() => undefined);
    return undefined;
  }
  await handleInteraction(interaction);
  return undefined;
}
