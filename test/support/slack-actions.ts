import { type EmuMessage, type SlackEmulator, waitFor } from "../emulators/slack/index.js";

/** A button (or link button) of a message, with the block it sits in. */
export type SlackAction = { action_id: string; value?: string; url?: string; block_id: string };

/** The buttons of a message's action blocks, in order. */
export function actionsOf(m: EmuMessage): SlackAction[] {
  const blocks = (m.blocks ?? []) as Array<{ type?: string; block_id?: string; elements?: SlackAction[] }>;
  return blocks
    .filter((b) => b.type === "actions")
    .flatMap((b) => (b.elements ?? []).map((e) => ({ ...e, block_id: b.block_id ?? "" })));
}

/** `/switchboard <text>` by `user` in `channel`: what the bot answered them (ephemerally). */
export async function switchboardSays(
  slack: SlackEmulator,
  text: string,
  user: string,
  channel = "C1",
): Promise<string> {
  const before = slack.state.ephemerals.length;
  slack.slash("/switchboard", text, user, channel);
  const told = await waitFor(() => slack.state.ephemerals.length > before && slack.state.ephemerals.at(-1), {
    timeoutMs: 20_000,
  });
  return told.text;
}
