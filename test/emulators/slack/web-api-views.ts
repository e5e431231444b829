import { type Params, str } from "./http-util.js";
import { checkView, findOpenView, openModal, pushModal, updateModal, usableTrigger } from "./modals.js";
import { type ApiContext, fail, type Handler } from "./web-api-context.js";

/**
 * views.open / views.push / views.update with Slack's rules: the view is checked first
 * (`invalid_arguments` with Slack's messages; nothing is used up), then the trigger:
 * unknown (`invalid_trigger_id`), used before (`exchanged_trigger_id`) or older than the
 * emulator's `triggerTtlMs` (`expired_trigger_id`). views.update names an open view
 * (`not_found` otherwise) and, with `hash`, the version it saw (`hash_conflict`).
 */
export function viewHandlers(ctx: ApiContext): Record<string, Handler> {
  const { state, hooks } = ctx;

  const triggerOf = (p: Params): string =>
    str(p, "trigger_id") ??
    str(p, "interactivity_pointer") ??
    fail("invalid_arguments", {
      response_metadata: { messages: ["[ERROR] missing required field: trigger_id"] },
    });

  const exchange = (p: Params, show: (user: string, view: Params) => { view: unknown }): Params => {
    const view = checkView(p.view);
    const trigger = usableTrigger(state, triggerOf(p), hooks.triggerTtlMs());
    const shown = show(trigger.user, view);
    trigger.exchangedAt = Date.now();
    return { view: shown.view };
  };

  return {
    "views.open": (p) => exchange(p, (user, view) => openModal(state, user, view)),
    "views.push": (p) => exchange(p, (user, view) => pushModal(state, user, view)),
    "views.update": (p) => {
      const view = checkView(p.view);
      const target = findOpenView(state, p);
      const hash = str(p, "hash");
      if (hash !== undefined && hash !== "" && hash !== target.view.hash) fail("hash_conflict");
      return { view: updateModal(state, target, view).view };
    },
  };
}
