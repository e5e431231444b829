import type { EmuMessage } from "../emulators/slack/index.js";

/** A button (or link button) of a message, with the block it sits in. */
export type SlackAction = { action_id: string; value?: string; url?: string; block_id: string };

/** The buttons of a message's action blocks, in order. */
export function actionsOf(m: EmuMessage): SlackAction[] {
  const blocks = (m.blocks ?? []) as Array<{ type?: string; block_id?: string; elements?: SlackAction[] }>;
  return blocks
    .filter((b) => b.type === "actions")
    .flatMap((b) => (b.elements ?? []).map((e) => ({ ...e, block_id: b.block_id ?? "" })));
}
