import { AttachmentBuilder, type BaseInteraction } from "discord.js";
import { joinParts, openFenceAtEnd } from "../../runtime/split.js";
import { DISCORD_MESSAGE_LIMIT, type QuestionRow } from "./reply.js";

/**
 * Discord's cap (Create Followup Message): 5 follow-ups for an interaction that a user
 * install alone authorized, i.e. the app used where its bot is not installed; a sixth is
 * refused with 40094. Discord documents no cap for the others.
 */
export const USER_INSTALL_FOLLOWUPS = 5;

/** How many follow-ups the interaction's token may send. */
export function followUpCap(interaction: Pick<BaseInteraction, "authorizingIntegrationOwners">): number {
  const owners = interaction.authorizingIntegrationOwners;
  return owners.guildId === null && owners.userId !== null
    ? USER_INSTALL_FOLLOWUPS
    : Number.POSITIVE_INFINITY;
}

export const FOLDED_FILE = "answer.md";

/** The last line of a message whose answer goes on in `answer.md`. */
export const FOLDED_NOTE = `-# Discord allows an app used here only ${USER_INSTALL_FOLLOWUPS} follow-up messages, so the rest of the answer is in ${FOLDED_FILE}.`;

/** The edit of the fold's message that one write of the answer comes to. */
export interface FoldedEdit {
  id: string;
  text: string;
  files: AttachmentBuilder[] | undefined;
  controls: QuestionRow[] | undefined;
}

/**
 * An answer that needs more messages than its interaction may still post: the messages
 * the writer goes on to post exist only here, and their text goes into `answer.md` on the
 * last message posted (`target`). That message keeps what of its own text fits beside the
 * note, cut at a line outside any code block; the file holds the rest, from there to the
 * end of the answer, with no fence repairs: the messages' texts and the file joined are
 * the answer's text.
 */
export class AnswerFold {
  /** The target's own text, as the writer last wrote it. */
  private head: string;
  /** The texts of the messages only this fold knows, in order. */
  private readonly parts: string[] = [];
  /** What `answer.md` last held on Discord, and the files that went with it. */
  private uploaded: string | undefined;
  private files: AttachmentBuilder[] = [];

  constructor(
    readonly target: string,
    headText: string,
  ) {
    this.head = headText;
  }

  /** A message the writer posts: it gets an id of its own, and its text goes in the file. */
  post(
    text: string,
    files?: AttachmentBuilder[],
    controls?: QuestionRow[],
  ): { id: string; edit: FoldedEdit } {
    this.parts.push(text);
    const id = `${this.target}+${this.parts.length}`;
    return { id, edit: this.edit(id, text, files, controls) };
  }

  /** Whether `id` is the target's or one of the messages only this fold knows. */
  has(id: string): boolean {
    return id === this.target || this.indexOf(id) >= 0;
  }

  /**
   * The target's edit for a write of `id`. Buttons follow the answer's last message (Stop
   * while it is written, the rating once done): those addressed to the others are the
   * writer taking them off earlier messages, which here would take them off the last.
   */
  edit(
    id: string,
    text: string | undefined,
    files?: AttachmentBuilder[],
    controls?: QuestionRow[],
  ): FoldedEdit {
    const index = this.indexOf(id);
    if (text !== undefined) {
      if (index >= 0) this.parts[index] = text;
      else this.head = text;
    }
    // A message keeps the files of its last write that carried any: answer.md goes with them.
    if (files) this.files = files;
    const { shown, rest } = this.layout();
    const upload = files !== undefined || rest !== this.uploaded;
    if (upload) this.uploaded = rest;
    const last = index === this.parts.length - 1;
    return {
      id: this.target,
      text: shown === "" ? FOLDED_NOTE : `${shown}\n${FOLDED_NOTE}`,
      files: upload ? [answerFile(rest), ...this.files] : undefined,
      controls: last ? controls : undefined,
    };
  }

  private indexOf(id: string): number {
    const prefix = `${this.target}+`;
    if (!id.startsWith(prefix)) return -1;
    const n = Number(id.slice(prefix.length));
    return Number.isInteger(n) && n >= 1 && n <= this.parts.length ? n - 1 : -1;
  }

  /**
   * The target's text before the note, and the file's. The cut falls after a line break
   * (so the note's line reads apart from it, and the file starts at a line), outside any
   * code block (the note must not land in one), and never past the target's own text: a
   * later message's text never moves up into it.
   */
  private layout(): { shown: string; rest: string } {
    const source = joinParts([this.head, ...this.parts]);
    const own = joinParts([this.head, ""]).length;
    const room = Math.min(own, DISCORD_MESSAGE_LIMIT - FOLDED_NOTE.length - 1);
    let cut = 0;
    for (let nl = source.indexOf("\n"); nl >= 0 && nl < room; nl = source.indexOf("\n", nl + 1)) {
      if (openFenceAtEnd(source.slice(0, nl + 1)) === null) cut = nl + 1;
    }
    return { shown: source.slice(0, cut), rest: source.slice(cut) };
  }
}

function answerFile(text: string): AttachmentBuilder {
  return new AttachmentBuilder(Buffer.from(text, "utf8"), { name: FOLDED_FILE });
}
