import type { Interaction } from "../../src/runtime/contract.js";
import { Dispatcher } from "../../src/runtime/dispatcher.js";
import type { DispatcherDeps } from "../../src/runtime/dispatcher-deps.js";
import { MemoryDedupe } from "../../src/store/dedupe.js";
import { LocalThreadLock } from "../../src/store/locks.js";

/**
 * Puts the real dispatcher behind a scripted runner's `interact`, so that adapter tests see
 * what a person would: bots and duplicates dropped, the expired note for everything else.
 * Each interaction is recorded in `seen` when it arrives and in `handled` once the
 * dispatcher is done with it.
 */
export function dispatchInteractions(runner: { interact(i: Interaction): Promise<unknown> }): {
  seen: Interaction[];
  handled: Interaction[];
} {
  // interact() reads only the dedupe (the lock names the process); a turn's dependencies are not needed for a click.
  const dispatcher = new Dispatcher({
    dedupe: new MemoryDedupe(),
    lock: new LocalThreadLock(),
  } as unknown as DispatcherDeps);
  const seen: Interaction[] = [];
  const handled: Interaction[] = [];
  runner.interact = async (interaction) => {
    seen.push(interaction);
    await dispatcher.interact(interaction);
    handled.push(interaction);
  };
  return { seen, handled };
}
