/**
 * The id a button, select or form carries on every platform (Slack `action_id` and
 * `callback_id`, Discord `custom_id`): `sb:{ref}`, or `sb:{ref}:{value}` when several
 * buttons of one message share a ref (Slack wants action ids unique within a block, Discord
 * custom ids unique within a message, and a Discord button has no value of its own).
 * The prefix keeps other apps' and old messages' ids apart from ours.
 */
export const INTERACTION_PREFIX = "sb:";

/** Discord's custom_id limit (Slack allows 255), so one id works on both. */
export const INTERACTION_ID_MAX = 100;

export function interactionId(ref: string, value?: string): string {
  if (!ref || ref.includes(":")) throw new Error(`An interaction ref must be non-empty without ":": ${ref}`);
  const id = `${INTERACTION_PREFIX}${ref}${value === undefined ? "" : `:${value}`}`;
  if (id.length > INTERACTION_ID_MAX)
    throw new Error(`An interaction id is longer than 100 characters: ${id}`);
  return id;
}

/** The ref and the value an id carries; undefined for ids that are not ours. */
export function parseInteractionId(id: string): { ref: string; value?: string } | undefined {
  if (!id.startsWith(INTERACTION_PREFIX)) return undefined;
  const rest = id.slice(INTERACTION_PREFIX.length);
  const colon = rest.indexOf(":");
  const ref = colon < 0 ? rest : rest.slice(0, colon);
  if (!ref) return undefined;
  return colon < 0 ? { ref } : { ref, value: rest.slice(colon + 1) };
}
