import type { ActionsBlock, KnownBlock, WebClient } from "@slack/web-api";
import { log } from "../../log.js";
import type { Question } from "../../runtime/contract.js";
import { interactionId } from "../../runtime/interaction-ids.js";
import type { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { feedbackBlock, messageBody } from "./message-ops.js";
import { toMrkdwn } from "./mrkdwn.js";
import { MESSAGE_BLOCKS_MAX, sectionBlock, sectionBlocks } from "./section-blocks.js";

/*
 * What a Slack reply offers beside its answer: the rating buttons under a finished one,
 * the asker's Stop button under a long one, and a question with buttons, posted and settled.
 * Offers are not answers: they go in the background lane, and not at all when late.
 */

interface OfferDeps {
  web: WebClient;
  scheduler: WriteScheduler;
}

/** Rating buttons that cannot be shown within this long after the answer are not shown. */
const RATING_LATE_MS = 3_000;
/** An answer still being written after this long gets its Stop button. */
const STOP_OFFER_AFTER_MS = 2_000;
/** A Stop offer that cannot go out within this long (the workspace's budget is spent) is not made. */
const STOP_OFFER_LATE_MS = 3_000;

/** The answer's last message rewritten with its text in a `markdown` block and the rating buttons under it. */
export async function showRatingButtons(
  deps: OfferDeps,
  channel: string,
  last: { id: string; text: string },
  ref: string,
): Promise<void> {
  await deps.scheduler
    .as(
      "background",
      () =>
        deps.web.chat.update({
          channel,
          ts: last.id,
          ...messageBody(last.text, [feedbackBlock(ref)]),
        }),
      // Behind every answer (the background lane), briefly: a channel's edits are paced, and
      // the final text has just used its budget. Late or met by a 429, it is dropped.
      { dropAfterMs: RATING_LATE_MS, requeue: false },
    )
    .catch((err: unknown) => log.debug({ err }, "rating buttons not shown"));
}

/**
 * A Stop button for the asker, in a private message under the thread, once the answer
 * has taken longer than a glance (unless `answered` aborted first, or `shownElsewhere`
 * says then that another stop button is on screen): a message written with
 * `markdown_text` cannot carry buttons, and a quick answer needs none.
 */
export function offerStopLater(
  deps: OfferDeps,
  place: { channel: string; threadTs: string; user: string },
  ref: string,
  answered: AbortSignal,
  shownElsewhere: () => Promise<boolean> = async () => false,
): void {
  const { channel, threadTs, user } = place;
  const timer = setTimeout(async () => {
    if (answered.aborted || (await shownElsewhere().catch(() => false)) || answered.aborted) return;
    const text = "Still working on your answer. Stop it here if it is going the wrong way.";
    // An offer, not an answer: it goes after every answer's writes, and not at all when late.
    void deps.scheduler
      .as(
        "background",
        () =>
          deps.web.chat.postEphemeral({
            channel,
            user,
            thread_ts: threadTs,
            text,
            blocks: [
              sectionBlock(text),
              questionActions({ ref, text, choices: [{ value: "stop", label: "Stop", style: "danger" }] }),
            ],
          }),
        { dropAfterMs: STOP_OFFER_LATE_MS },
      )
      .catch((err: unknown) => log.debug({ err }, "Stop button not offered"));
  }, STOP_OFFER_AFTER_MS);
  timer.unref();
  answered.addEventListener("abort", () => clearTimeout(timer), { once: true });
}

/** Slack's limits on a button's url, on the buttons of an actions block, and on a message's markdown. */
const BUTTON_URL_MAX = 3_000;
const ACTIONS_MAX = 25;
const MARKDOWN_MAX = 12_000;

/**
 * A question's blocks: its text (in as many sections as its escaped text needs, so that an
 * approval's closing fence and deadline stay: see sectionBlocks), its buttons, and,
 * between them, whole, the pages whose
 * address is too long for a button (a sign-in page's URL with its state and challenge;
 * cut, it would open the wrong page), in a `markdown` block, which holds more than a
 * section's 3,000 characters. Such a page gets no button: a press on one without its
 * link would tell the app the page was opened.
 */
export function questionBlocks(question: Question): KnownBlock[] {
  const long = question.choices.filter((c) => c.url !== undefined && c.url.length > BUTTON_URL_MAX);
  const buttons = question.choices.filter((c) => !long.includes(c)).slice(0, ACTIONS_MAX);
  const links = long.map((c) => `[${c.label}](${c.url})`).join("\n");
  const shown = links.length <= MARKDOWN_MAX ? links : "The page's address is too long for Slack to show it.";
  const others = (long.length > 0 ? 1 : 0) + (buttons.length > 0 ? 1 : 0);
  return [
    ...sectionBlocks(question.text, MESSAGE_BLOCKS_MAX - others),
    ...(long.length > 0 ? [{ type: "markdown" as const, text: shown }] : []),
    ...(buttons.length > 0 ? [questionActions({ ...question, choices: buttons })] : []),
  ];
}

/** A question with its buttons in the thread, after the answer so far; its ts, as Slack returned it. */
export async function postQuestion(
  web: WebClient,
  place: { channel: string; threadTs: string },
  question: Question,
): Promise<string | undefined> {
  const res = await web.chat.postMessage({
    channel: place.channel,
    thread_ts: place.threadTs,
    text: toMrkdwn(question.text),
    blocks: questionBlocks(question),
  });
  return res.ts;
}

/** A question's message as `text` alone, its buttons gone. */
export async function settleQuestion(
  web: WebClient,
  channel: string,
  ts: string,
  text: string,
): Promise<void> {
  await web.chat.update({ channel, ts, text: toMrkdwn(text), blocks: [sectionBlock(text)] });
}

export function questionActions(question: Question): ActionsBlock {
  return {
    type: "actions",
    block_id: `q-${question.ref}`.slice(0, 255),
    elements: question.choices.map((c) => ({
      type: "button",
      action_id: interactionId(question.ref, c.value),
      value: c.value,
      text: { type: "plain_text", text: c.label.slice(0, 75) },
      ...(c.style ? { style: c.style } : {}),
      // A link button opens the page; Slack still tells the app about the click.
      ...(c.url ? { url: c.url } : {}),
    })),
  };
}
