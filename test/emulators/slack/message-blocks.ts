import type { Params } from "./http-util.js";
import { block, Issues, isObject, MODAL_BLOCKS, stringField } from "./view-schema.js";

/**
 * Block Kit's rules for a message's `blocks` (chat.postMessage, chat.update,
 * chat.postEphemeral, chat.stopStream), as docs.slack.dev's block and element pages give
 * them: at most 50 blocks of the types a message takes (others are refused), section text
 * of at most 3,000 characters, at most 25 elements in an actions block, button text of at
 * most 75 characters, a value of at most 2,000 and a url of at most 3,000 (the rules a
 * modal's blocks share, in view-schema.ts); `markdown` blocks of 12,000 characters in all;
 * `context_actions` of 1 to 5 `feedback_buttons` or `icon_button`; block ids and action ids
 * unique in the message, since an interaction names its element by them. Each problem in
 * Slack's words; Slack answers any of them with `invalid_blocks`.
 */

/** The block types a message takes: @slack/types 2.x's `KnownBlock`. */
const MESSAGE_BLOCKS = new Set([
  ...MODAL_BLOCKS,
  "alert",
  "card",
  "carousel",
  "container",
  "context_actions",
  "data_table",
  "file",
  "markdown",
  "plan",
  "table",
  "task_card",
]);

/** Slack's cumulative limit on the text of `markdown` blocks in one message. */
const MARKDOWN_BLOCK_CHARS = 12_000;

const isPlainText = (t: unknown, max: number) =>
  isObject(t) &&
  t.type === "plain_text" &&
  typeof t.text === "string" &&
  t.text.length > 0 &&
  t.text.length <= max;

function contextActions(issues: Issues, b: Params, pointer: string): void {
  const elements = b.elements;
  if (!Array.isArray(elements) || elements.length < 1 || elements.length > 5) {
    issues.add(`${pointer}/elements`, "must provide 1 to 5 items");
    return;
  }
  elements.forEach((e: unknown, i) => {
    const p = `${pointer}/elements/${i}`;
    if (!isObject(e) || (e.type !== "feedback_buttons" && e.type !== "icon_button")) {
      issues.add(`${p}/type`, "must be one of: feedback_buttons, icon_button");
      return;
    }
    if (e.type === "icon_button") return;
    stringField(issues, e.action_id, `${p}/action_id`, 255);
    for (const side of ["positive_button", "negative_button"]) {
      const button = e[side];
      if (
        !isObject(button) ||
        !isPlainText(button.text, 75) ||
        typeof button.value !== "string" ||
        button.value === ""
      )
        issues.add(`${p}/${side}`, "must have plain_text of 1 to 75 characters and a value");
    }
  });
}

/** The action ids of a block's interactive elements, with where each is. */
function actionIds(b: Params, pointer: string): Array<[string, string]> {
  const found: Array<[string, string]> = [];
  const take = (e: unknown, at: string): void => {
    if (isObject(e) && typeof e.action_id === "string") found.push([`${at}/action_id`, e.action_id]);
  };
  if (Array.isArray(b.elements))
    b.elements.forEach((e, i) => {
      take(e, `${pointer}/elements/${i}`);
    });
  take(b.accessory, `${pointer}/accessory`);
  take(b.element, `${pointer}/element`);
  return found;
}

/** Every problem of a message's `blocks` (empty when Slack would take them). */
export function messageBlockProblems(blocks: unknown[], maxBlocks: number): string[] {
  const issues = new Issues();
  if (blocks.length > maxBlocks) issues.add("/blocks", `no more than ${maxBlocks} items allowed`);
  let markdown = 0;
  const blockIds = new Set<string>();
  const actions = new Set<string>();
  blocks.forEach((b, i) => {
    const p = `/blocks/${i}`;
    if (!isObject(b)) {
      issues.add(p, "must provide an object");
      return;
    }
    const type = String(b.type);
    if (!MESSAGE_BLOCKS.has(type)) {
      issues.add(`${p}/type`, `unsupported block type: ${type}`);
      return;
    }
    stringField(issues, b.block_id, `${p}/block_id`, 255);
    if (typeof b.block_id === "string") {
      if (blockIds.has(b.block_id)) issues.add(`${p}/block_id`, `duplicate block_id: ${b.block_id}`);
      blockIds.add(b.block_id);
    }
    for (const [at, id] of actionIds(b, p)) {
      if (actions.has(id)) issues.add(at, `duplicate action_id: ${id}`);
      actions.add(id);
    }
    if (type === "markdown") {
      if (typeof b.text !== "string" || b.text === "")
        issues.add(`${p}/text`, "must be more than 0 characters");
      markdown += typeof b.text === "string" ? b.text.length : 0;
      if (markdown > MARKDOWN_BLOCK_CHARS)
        issues.add(
          `${p}/text`,
          `markdown blocks must hold less than ${MARKDOWN_BLOCK_CHARS + 1} characters in all`,
        );
    } else if (type === "context_actions") contextActions(issues, b, p);
    else block(issues, b, p);
  });
  return issues.messages;
}
