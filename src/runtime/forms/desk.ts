import type { Config } from "../../config.js";
import { checkForm, type FormField, type FormValues, type FormView, formParts } from "../../core/forms.js";
import { randomRef } from "../../core/random-ref.js";
import type { Platform, ThreadKey } from "../../core/thread.js";
import { log } from "../../log.js";
import type { Elicit, ElicitationAnswer, ElicitationRequest } from "../../mcp/types.js";
import type { FormAnswer, FormBook, FormDraft, FormRecord } from "../../store/forms.js";
import { minutes } from "../approvals/questions.js";
import { type Interaction, type InteractionReply, OPEN_FORM, type Reply } from "../contract.js";
import { CONFIRM, FORM_OVER, formQuestion, REVEAL, revealText, settledForm } from "./texts.js";

export interface FormDeskDeps {
  config: Config;
  book: FormBook;
}

/** Where a turn's tool calls may ask their person. */
export interface FormPlace {
  reply: Reply;
  key: ThreadKey;
  user: { id: string; name?: string };
  platform: Platform;
  channel: string;
  /** The channel of the reply's messages, when the thread key does not say it. */
  where?: string;
}

/** Discord modals hold five components; a Slack modal a hundred blocks (one is the intro). */
const FIELDS_PER_VIEW: Record<Platform, number> = { slack: 50, discord: 5, console: 50 };
/** How often a waiting form looks for an answer given to another replica, and says it is still waiting. */
const POLL_MS = 1_000;
const LIVE_MS = 5_000;

/**
 * A tool's server asks its person something (MCP elicitation): a form (a modal opened from
 * a button in the thread) or a page to open. The tool call waits in this process, since the
 * server waits on this connection; the form, its parts and its answer are records, so the
 * click and the submission may reach any replica. Only the asker may answer; the first
 * answer wins; no answer within the approvals' expiry cancels.
 */
export class FormDesk {
  /** Wakes the form waiting in this process at once, rather than at its next look. */
  private readonly waiters = new Map<string, () => void>();

  constructor(private readonly deps: FormDeskDeps) {}

  private get expireAfterMs(): number {
    return this.deps.config.approvals.expireAfterMs;
  }

  /** The asking function of one turn's tool calls. */
  asker(place: FormPlace): Elicit {
    return (request, signal) =>
      this.ask(place, request, signal).catch((err: unknown) => {
        log.error({ err, key: place.key, server: request.server }, "could not ask for a server's form");
        return { action: "cancel" } as const;
      });
  }

  find(ref: string): Promise<FormRecord | undefined> {
    return this.deps.book.get(ref);
  }

  private async ask(
    place: FormPlace,
    request: ElicitationRequest,
    signal: AbortSignal,
  ): Promise<ElicitationAnswer> {
    const ask = place.reply.ask?.bind(place.reply);
    if (!ask || signal.aborted) return { action: "cancel" };
    const now = Date.now();
    const record: FormRecord = {
      ref: `fm${randomRef()}`,
      key: place.key,
      server: request.server,
      mode: request.mode,
      message: request.message,
      ...(request.mode === "form" ? { fields: request.fields } : { url: request.url }),
      ...(request.mode === "url" && request.mustComplete ? { mustComplete: true } : {}),
      ...(request.mode === "url" && request.private ? { private: true } : {}),
      asker: place.user,
      platform: place.platform,
      channel: place.channel,
      askedAt: new Date(now).toISOString(),
      expiresAt: new Date(now + this.expireAfterMs).toISOString(),
      ...(place.where ? { where: place.where } : {}),
    };
    // A Stop may come before the wait below listens for it (the post can queue behind the
    // channel's other writes), and a listener added to an aborted signal never fires.
    let unhook = (): void => undefined;
    const stopped = new Promise<"stopped">((resolve) => {
      const stop = () => resolve("stopped");
      signal.addEventListener("abort", stop, { once: true });
      unhook = () => signal.removeEventListener("abort", stop);
    });
    const posting = this.post(place, record, ask);
    const posted = await Promise.race([posting, stopped]).finally(unhook);
    if (posted === "stopped") {
      // The turn is free at once; a question that still lands is settled as a stopped form's is.
      void posting.then((shown) => (shown ? this.stoppedEarly(place, record) : undefined));
      return { action: "cancel" };
    }
    if (!posted) return { action: "cancel" };
    log.info(
      { key: place.key, server: record.server, mode: record.mode, ref: record.ref },
      "a server asks its person",
    );
    const answer = await this.wait(record, request, signal);
    await this.finish(place, record, answer);
    if (answer.action !== "accept") return { action: answer.action };
    return record.mode === "form"
      ? { action: "accept", content: answer.content ?? {} }
      : { action: "accept" };
  }

  /** Records the form and posts its question; false (and nothing left waiting) when it could not be posted. */
  private async post(place: FormPlace, record: FormRecord, ask: NonNullable<Reply["ask"]>): Promise<boolean> {
    const { book } = this.deps;
    try {
      await book.open(record);
      await book.keepAlive(record.ref, LIVE_MS);
      const parts = formParts(record.fields ?? [], FIELDS_PER_VIEW[record.platform]).length;
      record.messageId = await ask(formQuestion(record, parts, minutes(this.expireAfterMs)));
      await book.open(record);
      return true;
    } catch (err) {
      log.warn(
        { err, key: place.key, server: record.server },
        "could not post a server's form; it is cancelled",
      );
      await book.done(record.ref).catch(() => undefined);
      return false;
    }
  }

  /** A form stopped before its wait began: answered as wait() answers a Stop, the first answer winning. */
  private async stoppedEarly(place: FormPlace, record: FormRecord): Promise<void> {
    const ended: FormAnswer = { action: "cancel", end: "ended", at: new Date().toISOString() };
    await this.deps.book.answer(record, ended).catch(() => false);
    await this.finish(place, record, ended);
  }

  /** Ends the form's wait in the book and shows its answer on the question. */
  private async finish(place: FormPlace, record: FormRecord, answer: FormAnswer): Promise<void> {
    await this.deps.book.done(record.ref).catch(() => undefined);
    if (record.messageId && place.reply.settle) {
      await place.reply
        .settle(record.messageId, settledForm(record, answer, minutes(this.expireAfterMs)))
        .catch((err: unknown) => log.warn({ err, key: place.key }, "could not show a form's answer"));
    }
    log.info(
      { key: place.key, server: record.server, action: answer.action, end: answer.end },
      "form answered",
    );
  }

  /** The first answer: a person's (here or in another replica), the timeout, the call's end, or the flow's end. */
  private wait(record: FormRecord, request: ElicitationRequest, signal: AbortSignal): Promise<FormAnswer> {
    const { book } = this.deps;
    return new Promise((resolve) => {
      let finished = false;
      const finish = async (proposed?: Omit<FormAnswer, "at">): Promise<void> => {
        if (finished) return;
        if (proposed)
          await book.answer(record, { ...proposed, at: new Date().toISOString() }).catch(() => false);
        const answer =
          (await book.answered(record.ref).catch(() => undefined)) ??
          (proposed ? { ...proposed, at: new Date().toISOString() } : undefined);
        if (!answer || finished) return;
        finished = true;
        clearInterval(poll);
        clearTimeout(timer);
        signal.removeEventListener("abort", ended);
        this.waiters.delete(record.ref);
        resolve(answer);
      };
      const ended = () => void finish({ action: "cancel", end: "ended" });
      const poll = setInterval(() => {
        if (finished) return;
        void book.keepAlive(record.ref, LIVE_MS).catch(() => undefined);
        void finish();
      }, POLL_MS);
      const timer = setTimeout(
        () => void finish({ action: "cancel", end: "timeout" }),
        Math.max(0, Date.parse(record.expiresAt) - Date.now()),
      );
      // The tool call holds the process's interest in the form; its timers alone must not.
      poll.unref();
      timer.unref();
      this.waiters.set(record.ref, () => void finish());
      signal.addEventListener("abort", ended, { once: true });
      // A Stop between the post and this listener would otherwise leave the form to its expiry.
      if (signal.aborted) ended();
      if (request.mode === "url")
        void request.completed.then(() => finish({ action: "accept", end: "completed" }));
    });
  }

  /** A click on a form's buttons, or a submitted form. Every refusal is a sentence to the person and changes nothing. */
  async interact(interaction: Interaction, record: FormRecord): Promise<InteractionReply | undefined> {
    const { book } = this.deps;
    if ((await book.answered(record.ref)) || !(await book.live(record.ref))) {
      await interaction.respond(FORM_OVER);
      return undefined;
    }
    if (interaction.user.id !== record.asker.id) {
      await interaction.respond(
        `Only ${record.asker.name ?? record.asker.id} can answer this, since it is their request; nothing changed.`,
      );
      return undefined;
    }
    if (interaction.kind === "form") return this.submit(interaction, record);
    const by = byOf(interaction);
    switch (interaction.value) {
      case OPEN_FORM:
        if (record.mode === "form" && record.fields?.length) return { open: await this.view(record) };
        break;
      case CONFIRM:
        if (record.mode === "form" && !record.fields?.length)
          return this.take(interaction, record, { action: "accept", content: {}, by });
        break;
      case "decline":
      case "cancel":
        return this.take(interaction, record, { action: interaction.value, by });
      case "done":
        return this.take(interaction, record, { action: "accept", by });
      case REVEAL:
        if (record.mode === "url" && record.private && record.url) {
          await interaction.respond(revealText(record));
          return undefined;
        }
        break;
      case "open":
        // Slack reports a click on the link: consent to open it, unless only the flow's end will do.
        if (record.mode === "url" && !record.mustComplete)
          return this.take(interaction, record, { action: "accept", by });
        return undefined;
    }
    await interaction.respond("That is not one of this form's choices, so nothing changed.");
    return undefined;
  }

  private async view(record: FormRecord): Promise<FormView> {
    const parts = formParts(record.fields ?? [], FIELDS_PER_VIEW[record.platform]);
    const draft = await this.deps.book.draft(record.ref);
    const index = Math.max(
      0,
      parts.findIndex((_, i) => !draft?.parts.includes(i)),
    );
    const typed = draft?.typed ?? {};
    const fields = (parts[index] ?? []).map((f): FormField => {
      const t = typed[f.id];
      return t === undefined
        ? f
        : { ...f, default: typeof t === "string" && f.kind !== "choices" ? t : toList(t) };
    });
    return {
      ref: record.ref,
      title: parts.length > 1 ? `${record.server} (${index + 1}/${parts.length})` : record.server,
      intro: record.message,
      fields,
      part: index,
      count: parts.length,
      submitLabel: index < parts.length - 1 ? "Next" : "Send",
    };
  }

  private async submit(interaction: Interaction, record: FormRecord): Promise<InteractionReply | undefined> {
    const { book } = this.deps;
    const parts = formParts(record.fields ?? [], FIELDS_PER_VIEW[record.platform]);
    const index = Number(/^p(\d+)$/.exec(interaction.via ?? "p0")?.[1] ?? Number.NaN);
    const fields = parts[index];
    if (!fields || typeof interaction.value === "string") {
      await interaction.respond("That submission does not belong to this form, so nothing changed.");
      return undefined;
    }
    const values: FormValues = interaction.value;
    const draft: FormDraft = (await book.draft(record.ref)) ?? { parts: [], accepted: {}, typed: {} };
    draft.typed = { ...draft.typed, ...values };
    const checked = checkForm(fields, values);
    if (!checked.ok) {
      await book.saveDraft(record, draft);
      return { errors: checked.errors };
    }
    draft.accepted = { ...draft.accepted, ...checked.content };
    if (!draft.parts.includes(index)) draft.parts.push(index);
    const next = parts.findIndex((_, i) => !draft.parts.includes(i));
    if (next >= 0) {
      await book.saveDraft(record, draft);
      await interaction.respond(
        `Part ${index + 1} of ${parts.length} is saved. Press Fill in again for part ${next + 1}.`,
      );
      return undefined;
    }
    return this.take(interaction, record, {
      action: "accept",
      content: draft.accepted,
      by: byOf(interaction),
    });
  }

  private async take(
    interaction: Interaction,
    record: FormRecord,
    answer: Omit<FormAnswer, "at">,
  ): Promise<undefined> {
    if (!(await this.deps.book.answer(record, { ...answer, at: new Date().toISOString() }))) {
      await interaction.respond("This was answered just before you, so nothing changed.");
      return undefined;
    }
    this.waiters.get(record.ref)?.();
    return undefined;
  }
}

function byOf(interaction: Interaction): { id: string; name?: string } {
  return { id: interaction.user.id, ...(interaction.user.name ? { name: interaction.user.name } : {}) };
}

function toList(v: string | string[]): string[] {
  return Array.isArray(v)
    ? v
    : v
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
}
